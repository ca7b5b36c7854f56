import Glibc
import SluiceIO
import SluiceLoop
import SluiceSystem
import SluiceWire

/// A TCP echo server on the test's loop: every connection gets back what it sent, and its FIN after
/// the last byte. Counts what it received, per connection, for the tests to compare.
final class LoopTCPEchoServer {
    private final class Connection {
        let socket: Socket
        var pending: [UInt8] = []
        var received = 0
        var sawEOF = false
        var closed = false
        init(socket: Socket) { self.socket = socket }
    }

    let endpoint: SocketEndpoint
    private let listener: Socket
    private unowned let loop: EventLoop
    private var connections: [Int32: Connection] = [:]
    /// Bytes received over all connections, and how many connections ended (EOF answered).
    private(set) var bytesReceived = 0
    private(set) var finished = 0
    private(set) var accepted = 0

    init(on address: IPAddress, loop: EventLoop) throws {
        self.loop = loop
        listener = try Socket.listen(on: SocketEndpoint(address: address, port: 0))
        endpoint = try listener.localEndpoint()
        try loop.register(fd: listener.fd, events: [.readable]) { [unowned self] _ in self.acceptAll() }
    }

    func close() {
        loop.deregister(fd: listener.fd)
        listener.close()
        for c in connections.values where !c.closed {
            loop.deregister(fd: c.socket.fd)
            c.socket.close()
        }
        connections.removeAll()
    }

    private func acceptAll() {
        while case .done(let (socket, _))? = try? listener.accept() {
            accepted += 1
            let c = Connection(socket: socket)
            connections[socket.fd] = c
            try? loop.register(fd: socket.fd, events: [.readable, .writable, .readHangup, .edgeTriggered]) { [unowned self] _ in
                self.serve(c)
            }
        }
    }

    private func serve(_ c: Connection) {
        guard !c.closed else { return }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !c.sawEOF {
            guard case .done(let n)? = buffer.withUnsafeMutableBytes({ try? c.socket.read(into: $0) }) else { break }
            if n == 0 {
                c.sawEOF = true
                break
            }
            c.received += n
            bytesReceived += n
            c.pending.append(contentsOf: buffer[0..<n])
        }
        while !c.pending.isEmpty {
            guard case .done(let n)? = c.pending.withUnsafeBytes({ try? c.socket.write($0) }), n > 0 else { break }
            c.pending.removeFirst(n)
        }
        if c.sawEOF && c.pending.isEmpty {
            c.closed = true
            finished += 1
            loop.deregister(fd: c.socket.fd)
            c.socket.shutdownWrite()
            c.socket.close()
            connections[c.socket.fd] = nil
        }
    }
}

/// A UDP echo server on the test's loop: each datagram goes back to its sender unchanged.
final class LoopUDPEchoServer {
    let endpoint: SocketEndpoint
    private let socket: Socket
    private let dualStack: Bool
    private unowned let loop: EventLoop
    private(set) var datagrams = 0

    init(on address: IPAddress, loop: EventLoop, port: UInt16 = 0) throws {
        self.loop = loop
        let fd = Glibc.socket(address.isIPv4 ? AF_INET : AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket(UDP)") }
        socket = Socket(fd: fd)
        dualStack = false
        let bound = SocketEndpoint(address: address, port: port).withSockaddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            socket.close()
            throw SystemError("bind(UDP)")
        }
        endpoint = try socket.localEndpoint()
        try loop.register(fd: fd, events: [.readable]) { [unowned self] _ in self.echo() }
    }

    func close() {
        loop.deregister(fd: socket.fd)
        socket.close()
    }

    private func echo() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while case .done(let (n, source?))? = buffer.withUnsafeMutableBytes({ try? socket.receive(datagramInto: $0) }) {
            datagrams += 1
            _ = buffer.withUnsafeBytes { try? socket.send(datagram: UnsafeRawBufferPointer(rebasing: $0[0..<n]), to: source, dualStack: dualStack) }
        }
    }
}
