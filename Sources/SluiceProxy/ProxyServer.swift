import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceTunnel
import SluiceWire

/// `sluice socks`: a SOCKS5 and HTTP proxy on one port, without a TUN, whose clients' connections
/// become streams (and UDP associations) of an upstream — the carriers of a `RelayUpstream`.
/// Loop-confined.
public final class ProxyServer {
    let upstream: Upstream
    let users: ProxyUsers
    unowned let loop: EventLoop
    private let listener: Socket
    public let listeningEndpoint: SocketEndpoint
    private var connections: [ObjectIdentifier: ProxyConnection] = [:]
    /// Where clients' bytes are read into on their way to a stream, and datagrams into.
    var scratch = [UInt8](repeating: 0, count: 65536 + 262)
    /// Where answers to UDP clients are assembled (a datagram's bytes may still be in `scratch`).
    var reply = [UInt8](repeating: 0, count: 65536 + 262)
    /// Datagrams and connections dropped, by reason (debug log on shutdown).
    private(set) var drops: [String: Int] = [:]

    /// Listens on `listen`; clients' connections go through `upstream`, which the caller starts.
    public init(listen: SocketEndpoint, upstream: Upstream, users: ProxyUsers, loop: EventLoop) throws(SystemError) {
        self.upstream = upstream
        self.users = users
        self.loop = loop
        let listener = try Socket.listen(on: listen)
        self.listener = listener
        listeningEndpoint = try listener.closingOnFailure { () throws(SystemError) in try listener.localEndpoint() }
        try listener.closingOnFailure { () throws(SystemError) in
            try loop.register(fd: listener.fd, events: [.readable]) { [unowned self] _ in self.acceptAll() }
        }
    }

    /// Closes the listener and every client connection.
    public func shutdown() {
        loop.deregister(fd: listener.fd)
        listener.close()
        for connection in Array(connections.values) { connection.close(reset: true, why: nil) }
        if !drops.isEmpty { Log.debug("dropped: \(drops.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))", "proxy") }
    }

    /// Connections open now.
    public var connectionCount: Int { connections.count }

    private func acceptAll() {
        while true {
            let accepted: IOResult<(Socket, SocketEndpoint?)>
            do {
                accepted = try listener.accept()
            } catch {
                Log.warning("accept on \(listeningEndpoint): \(error)", "proxy")
                return
            }
            guard case .done(let (socket, peer)) = accepted else { return }
            do {
                let connection = try ProxyConnection(socket: socket, peer: peer ?? listeningEndpoint, server: self)
                connections[ObjectIdentifier(connection)] = connection
            } catch {
                socket.close()
                Log.warning("a client of \(listeningEndpoint): \(error)", "proxy")
            }
        }
    }

    func connectionEnded(_ connection: ProxyConnection) {
        connections[ObjectIdentifier(connection)] = nil
    }

    func count(_ reason: String) { drops[reason, default: 0] += 1 }
}
