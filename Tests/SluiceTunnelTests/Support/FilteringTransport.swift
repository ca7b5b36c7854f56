import Glibc
import SluiceIO
import SluiceSystem
import SluiceTunnel
import SluiceWire

/// A `CarrierTransport` whose UDP sockets can be made deaf: a classic BPF program that accepts
/// nothing (`ret #0`, attached with SO_ATTACH_FILTER) drops every packet the kernel would queue on
/// them, as a firewall dropping the relay's UDP would — the probes leave, no answer is read. The
/// carriers' TCP sockets are plain. Used on the test's loop thread only.
final class FilteringTransport: CarrierTransport, @unchecked Sendable {
    private var sockets: [Int32] = []
    /// Whether UDP sockets hear nothing; applies to those made already and to new ones.
    var deaf = false {
        didSet { for fd in sockets { apply(fd) } }
    }

    func connect(to relay: SocketEndpoint) throws(SystemError) -> Socket {
        try DirectCarrierTransport().connect(to: relay)
    }

    func udpSocket(for address: IPAddress) throws(SystemError) -> Socket {
        let socket = try Socket.udp(for: address)
        sockets.append(socket.fd)
        apply(socket.fd)
        return socket
    }

    private func apply(_ fd: Int32) {
        if deaf {
            // struct sock_filter { u16 code; u8 jt, jf; u32 k } = BPF_RET|BPF_K, 0 (keep no byte).
            var instruction: (UInt16, UInt8, UInt8, UInt32) = (0x06, 0, 0, 0)
            withUnsafeMutableBytes(of: &instruction) { filter in
                // struct sock_fprog { u16 len; struct sock_filter *filter } (pointer at offset 8).
                var program = [UInt8](repeating: 0, count: 16)
                program.withUnsafeMutableBytes { raw in
                    raw.storeBytes(of: UInt16(1), toByteOffset: 0, as: UInt16.self)
                    raw.storeBytes(of: filter.baseAddress!, toByteOffset: 8, as: UnsafeMutableRawPointer.self)
                    _ = setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, raw.baseAddress, socklen_t(raw.count))
                }
            }
        } else {
            var unused: Int32 = 0
            _ = setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &unused, socklen_t(MemoryLayout<Int32>.size))
        }
    }
}
