import Glibc
import SluiceHost
import SluiceLog

/// TUN offloads: with IFF_VNET_HDR and TUNSETOFFLOAD(CSUM | TSO4 | TSO6) one read brings up to 64 KiB
/// of one TCP flow and one write takes as much, instead of one syscall per 1500-byte packet — the
/// packet path's main cost. (Facts behind this: docs in Benchmarks/README.md and issue notes.)
enum TunOffload {
    /// TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 (linux/if_tun.h).
    static let flags: UInt32 = 0x01 | 0x02 | 0x04

    /// Opens the TUN with offloads when asked and the kernel takes them; otherwise (an old kernel,
    /// a TUN that refuses TUNSETOFFLOAD) without, one packet per read and write. Returns whether
    /// the offloads are on.
    static func open(name: String, offloads: Bool) throws(HostError) -> (TunDevice, Bool) {
        if offloads {
            let tun = try TunDevice(name: name, options: TunDevice.Options(vnetHeader: true))
            do {
                try tun.setOffloads(flags)
                return (tun, true)
            } catch {
                Log.warning("\(error); continuing without TUN offloads (slower)", "client")
            }
        }
        // The first device (if any) is released before the plain one opens the same name.
        return (try TunDevice(name: name), false)
    }

    /// A coalescer writing whole buffers (vnet header + packet) to `tun`, whose MTU is `mtu`.
    static func coalescer(for tun: TunDevice, mtu: Int) -> SegmentCoalescer {
        SegmentCoalescer(mtu: mtu) { bytes in
            if case .done = (try? tun.write(bytes)) ?? .wouldBlock { return true }
            return false
        }
    }
}
