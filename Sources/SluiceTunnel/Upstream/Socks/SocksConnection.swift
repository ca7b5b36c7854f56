import SluiceIO
import SluiceLoop
import SluiceSocks
import SluiceSystem
import SluiceWire

/// One TCP connection to the SOCKS5 server through its handshake: connect, greeting, RFC 1929
/// authentication when asked, then the request and its reply — or, for a check of the server
/// (`request` nil), up to the point where the request would go. Subclasses carry on from there:
/// `SocksStream` (CONNECT), `SocksAssociation` (UDP ASSOCIATE), `SocksProbe`. Loop-confined.
///
/// The socket is registered once, edge-triggered for both directions, and keeps its registration
/// through the data phase; `socketEvents` is where a subclass takes over.
class SocksConnection {
    /// How long the server has to answer, from connect to reply.
    static let timeoutMilliseconds: UInt64 = 15_000

    unowned let upstream: SocksUpstream
    let socket: Socket
    private var machine: SocksClientHandshake
    private let stopAfterAuthentication: Bool
    private var connected = false
    /// Bytes the server sent that the handshake has not consumed yet.
    private var inbound: [UInt8] = []
    private var timer: LoopTimer?
    /// Set once the reply came: from then on events go to `socketEvents`.
    private(set) var handshakeDone = false
    private(set) var closed = false

    /// Creates the socket through the upstream's transport and starts connecting.
    init(upstream: SocksUpstream, request: SocksRequest?) throws(SocksDialFailure) {
        self.upstream = upstream
        let server = upstream.server.endpoint
        machine = SocksClientHandshake(request: request ?? SocksRequest(command: .connect, address: .unspecifiedIPv4),
                                       credentials: upstream.server.credentials)
        stopAfterAuthentication = request == nil
        do {
            socket = try upstream.transport.connect(to: server)
        } catch {
            throw .connect(server: server, error)
        }
        do throws(SystemError) {
            try upstream.loop.register(fd: socket.fd, events: [.readable, .writable, .readHangup, .edgeTriggered]) { [unowned self] in
                self.handle($0)
            }
        } catch {
            socket.close()
            throw .connect(server: server, error)
        }
        // Strong capture, cancelled when the handshake ends (see EventLoop.schedule on weak captures).
        timer = upstream.loop.schedule(afterMilliseconds: Self.timeoutMilliseconds) {
            guard !self.handshakeDone, !self.closed else { return }
            self.fail(.timedOut(server: server, seconds: Self.timeoutMilliseconds / 1000), requestSent: self.requestSent)
        }
    }

    /// Whether the request went out: a failure after it may be the destination's (a slow connect
    /// at the server), not the server's.
    private var requestSent = false

    // MARK: for subclasses

    /// The server replied to the request (any code). `leftover` holds bytes that followed the reply
    /// in the same read: the first of the data. Valid only during the call.
    func handshakeReplied(_ reply: SocksReply, leftover: UnsafeRawBufferPointer) {}
    /// Probe only: the server accepted the greeting and the credentials.
    func handshakeAuthenticated() {}
    /// The handshake failed; the socket is closed already.
    func handshakeFailed(_ failure: SocksDialFailure, requestSent: Bool) {}
    /// Socket events after the handshake.
    func socketEvents(_ events: IOEvents) {}

    /// Deregisters and closes the socket, with RST when `reset`.
    func closeSocket(reset: Bool) {
        guard !closed else { return }
        closed = true
        timer?.cancel()
        upstream.loop.forgetBeforeClose(fd: socket.fd)
        if reset { socket.closeWithReset() } else { socket.close() }
    }

    // MARK: the handshake

    private func handle(_ events: IOEvents) {
        guard !closed else { return }
        guard !handshakeDone else { return socketEvents(events) }
        if !connected {
            guard events.contains(.writable) || events.contains(.error) || events.contains(.hangup) else { return }
            let err = socket.pendingError()
            guard err == 0 else { return fail(.connect(server: upstream.server.endpoint, SystemError("", code: err)), requestSent: false) }
            connected = true
            guard write(machine.start()) else { return }
        }
        if events.contains(.readable) || events.contains(.readHangup) || events.contains(.error) || events.contains(.hangup) {
            readHandshake()
            // The reply may have come with more in the same edge — data, or the server's EOF when the
            // destination closed at once: the socket is registered edge-triggered, so no new event
            // would report it. The subclass takes this one over.
            if handshakeDone && !closed { socketEvents(events) }
        }
    }

    private func readHandshake() {
        var buffer = [UInt8](repeating: 0, count: 1024)
        while !closed && !handshakeDone {
            let read = buffer.withUnsafeMutableBytes { b in Result { () throws(SystemError) in try socket.read(into: b) } }
            guard case .success(let result) = read else {
                if case .failure(let error) = read { fail(.closed(server: upstream.server.endpoint, error), requestSent: requestSent) }
                return
            }
            switch result {
            case .wouldBlock: return
            case .done(0): return fail(.closed(server: upstream.server.endpoint, nil), requestSent: requestSent)
            case .done(let n):
                upstream.bytesReceived += n
                inbound += buffer[0..<n]
                advance()
            }
        }
    }

    /// Feeds the machine what arrived until it waits, sends what it says, ends the handshake.
    private func advance() {
        while !closed {
            let received = inbound.withUnsafeBytes { b in Result { () throws(SocksClientHandshake.Failure) in try machine.receive(b) } }
            let consumed: Int, step: SocksClientHandshake.Step
            switch received {
            case .success(let r): (consumed, step) = r
            case .failure(let error): return fail(.handshake(error), requestSent: requestSent)
            }
            inbound.removeFirst(consumed)
            switch step {
            case .wait:
                return
            case .send(let bytes):
                if stopAfterAuthentication && machine.isAwaitingReply {
                    // What would go now is the request: the server took greeting and credentials.
                    finishHandshake()
                    return handshakeAuthenticated()
                }
                requestSent = machine.isAwaitingReply
                guard write(bytes) else { return }
            case .done(let reply):
                finishHandshake()
                let rest = inbound
                inbound = []
                rest.withUnsafeBytes { handshakeReplied(reply, leftover: $0) }
                return
            }
        }
    }

    private func finishHandshake() {
        handshakeDone = true
        timer?.cancel()
        timer = nil
    }

    /// Handshake messages are a few hundred bytes at most on a fresh connection: the socket's send
    /// buffer takes them whole, or the connection is broken.
    private func write(_ bytes: [UInt8]) -> Bool {
        let result = try? bytes.withUnsafeBytes { try socket.write($0) }
        guard case .done(let n)? = result, n == bytes.count else {
            fail(.closed(server: upstream.server.endpoint, SystemError("send", code: socket.pendingError())), requestSent: requestSent)
            return false
        }
        upstream.bytesSent += n
        return true
    }

    private func fail(_ failure: SocksDialFailure, requestSent: Bool) {
        closeSocket(reset: true)
        handshakeFailed(failure, requestSent: requestSent)
    }
}
