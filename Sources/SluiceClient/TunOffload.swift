import Glibc
import SluiceHost

/// TUN offloads: with IFF_VNET_HDR and TUNSETOFFLOAD(CSUM | TSO4 | TSO6) one read brings up to 64 KiB
/// of one TCP flow and one write takes as much, instead of one syscall per 1500-byte packet — the
/// packet path's main cost. (Facts behind this: docs in Benchmarks/README.md and issue notes.)
enum TunOffload {
    /// TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 (linux/if_tun.h).
    static let flags: UInt32 = 0x01 | 0x02 | 0x04

    /// A coalescer writing to `tun`: whole buffers with `write`, header + packet with `writev`.
    static func coalescer(for tun: TunDevice) -> SegmentCoalescer {
        let fd = tun.fd
        let coalescer = SegmentCoalescer { bytes in
            if case .transferred = (try? tun.write(bytes)) ?? .wouldBlock { return true }
            return false
        }
        coalescer.writev = { iov in
            while true {
                let n = iov.withUnsafeBufferPointer { Glibc.writev(fd, $0.baseAddress, Int32($0.count)) }
                if n >= 0 { return true }
                if errno != EINTR { return false }
            }
        }
        return coalescer
    }
}
