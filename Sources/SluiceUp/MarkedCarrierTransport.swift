import Glibc
import SluiceHost
import SluiceIO
import SluiceSystem
import SluiceTunnel
import SluiceWire

/// Carrier sockets for `sluice up` (and, with a SOCKS5 upstream, its TCP and UDP sockets to the
/// SOCKS server): marked with `SO_MARK`, so the policy rule `not fwmark M lookup T` keeps them on
/// the host's normal routes and they never loop into the TUN (README, "How routing works"). Setting
/// the mark needs CAP_NET_ADMIN.
struct MarkedCarrierTransport: CarrierTransport {
    let fwmark: UInt32

    func connect(to relay: SocketEndpoint) throws(SystemError) -> Socket {
        try startConnecting(marked(Socket.tcp(for: relay.address)), to: relay)
    }

    func udpSocket(for address: IPAddress) throws(SystemError) -> Socket {
        try marked(Socket.udp(for: address))
    }

    /// `socket` with the mark set, or closed and an error that says what is missing.
    private func marked(_ socket: Socket) throws(SystemError) -> Socket {
        do {
            try SocketMark.set(fwmark, on: socket.fd)
        } catch {
            socket.close()
            throw SystemError("setsockopt(SO_MARK 0x\(String(fwmark, radix: 16)))", code: error.errno ?? EPERM,
                              hint: "marking carrier sockets needs root or CAP_NET_ADMIN")
        }
        return socket
    }
}
