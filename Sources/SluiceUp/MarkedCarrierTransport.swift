import Glibc
import SluiceHost
import SluiceIO
import SluiceSystem
import SluiceTunnel
import SluiceWire

/// Carrier sockets for `sluice up`: marked with `SO_MARK`, so the policy rule `not fwmark M lookup T`
/// keeps them on the host's normal routes and they never loop into the TUN (README, "How routing
/// works"). Setting the mark needs CAP_NET_ADMIN.
struct MarkedCarrierTransport: CarrierTransport {
    let fwmark: UInt32

    func connect(to relay: SocketEndpoint) throws(SystemError) -> Socket {
        let socket = try Socket.tcp(for: relay.address)
        do throws(SystemError) {
            do {
                try SocketMark.set(fwmark, on: socket.fd)
            } catch {
                throw SystemError("setsockopt(SO_MARK 0x\(String(fwmark, radix: 16)))", code: error.errno ?? EPERM,
                                  hint: "marking carrier sockets needs root or CAP_NET_ADMIN")
            }
            socket.setNoDelay()
            try socket.connect(to: relay)
        } catch {
            socket.close()
            throw error
        }
        return socket
    }
}
