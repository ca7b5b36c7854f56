import Glibc
import SluiceIO
import SluiceWire

/// The sockets one test opens — UDP on loopback, or any it adopts — closed together in its tearDown.
final class TestSockets {
    private var opened: [Socket] = []

    /// A UDP socket bound to 127.0.0.1 on a port the kernel picks, and that endpoint.
    func bound() throws -> (Socket, SocketEndpoint) {
        let s = adopt(try Socket.udpBound(on: SocketEndpoint("127.0.0.1:0")!))
        return (s, try s.localEndpoint())
    }

    /// An unbound IPv4 UDP socket.
    func unbound() throws -> Socket { adopt(try Socket.udp(for: IPAddress("127.0.0.1")!)) }

    @discardableResult
    func adopt(_ socket: Socket) -> Socket {
        opened.append(socket)
        return socket
    }

    /// Closes `socket` now (it is not closed again).
    func close(_ socket: Socket) {
        opened.removeAll { $0.fd == socket.fd }
        socket.close()
    }

    func closeAll() {
        for s in opened { s.close() }
        opened = []
    }
}
