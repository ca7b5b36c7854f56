import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSocks
import SluiceSystem
import SluiceTunnel
import SluiceWire

/// One client of `sluice socks`: a TCP connection that speaks SOCKS5 or HTTP (told apart by its
/// first byte, 0x05 being SOCKS5's version, as clash's mixed port does), asks for a destination, and
/// is then joined to one stream of the relay's carriers. Loop-confined.
///
/// The join has the engine's backpressure: the client's socket is read only for what the stream can
/// send now (its credit and its carrier's budget), and bytes from the relay are reported consumed
/// only once the client's socket took them. So a client that stops reading stalls only its stream.
final class ProxyConnection: UpstreamStreamHandler {
    enum Phase { case sniffing, socks, http, opening, joined, udp, done }

    unowned let server: ProxyServer
    let socket: Socket
    let peer: SocketEndpoint
    private(set) var phase = Phase.sniffing
    var socksHandshake: SocksServerHandshake?
    /// Handshake bytes; once joined, bytes from the client not yet taken by the stream.
    let inbound = ByteQueue(capacity: 0)
    /// Bytes from the relay the client's socket has not taken yet (bounded by the stream window).
    private let outbound = ByteQueue(capacity: 0)
    var stream: UpstreamStream?
    var udpRelay: SocksUDPRelay?
    /// What to tell the client when the stream opens or fails (SOCKS5 or HTTP words).
    var answer: ((Result<Void, OpenFailure>) -> [UInt8]?)?
    /// HTTP absolute-form: one request, one response, then close.
    var closeAfterResponse = false
    private var readable = false
    private var writable = true
    private var clientEOF = false
    private var sentFIN = false
    private var upstreamFIN = false

    /// Why a stream did not open, for the client's reply.
    enum OpenFailure: Error {
        case unavailable
        case refused(ResetReason)
    }

    init(socket: Socket, peer: SocketEndpoint, server: ProxyServer) throws(SystemError) {
        self.socket = socket
        self.peer = peer
        self.server = server
        socket.setNoDelay()
        try server.loop.register(fd: socket.fd, events: [.readable, .writable, .readHangup, .edgeTriggered]) { [unowned self] in
            self.handle($0)
        }
    }

    // MARK: events

    private func handle(_ events: IOEvents) {
        guard phase != .done else { return }
        if events.contains(.writable) {
            writable = true
            flushToClient()
        }
        if events.contains(.readable) || events.contains(.readHangup) || events.contains(.hangup) || events.contains(.error) {
            readable = true
            readClient()
        }
    }

    private func readClient() {
        switch phase {
        case .sniffing, .socks, .http: readHandshake()
        case .joined: pumpToUpstream()
        case .udp: readControl()
        case .opening, .done: return  // the bytes wait in the socket until the stream opens
        }
    }

    /// Reads what the client sent before its destination is known, and hands it to the protocol.
    private func readHandshake() {
        while readable && (phase == .sniffing || phase == .socks || phase == .http) {
            let n: Int
            do {
                n = try inbound.write(minimum: 2048) { (buffer) throws(SystemError) -> Int in
                    switch try socket.read(into: buffer) {
                    case .done(let n): return n
                    case .wouldBlock: return -1
                    }
                }
            } catch {
                return close(reset: true, why: "\(error)")
            }
            if n < 0 {
                readable = false
                return
            }
            if n == 0 { return close(reset: false, why: "closed before asking for a destination") }
            if phase == .sniffing {
                if inbound.readableBytes[0] == SocksGreeting.version {
                    phase = .socks
                    socksHandshake = SocksServerHandshake(authenticate: server.users.isEmpty ? nil : { [users = server.users] in
                        users.accepts(user: $0, password: $1)
                    })
                } else {
                    phase = .http
                }
            }
            if phase == .socks { advanceSocks() } else if phase == .http { advanceHTTP() }
        }
    }

    /// Control connection of a UDP association: nothing is expected on it; its end ends the association.
    private func readControl() {
        var sink = [UInt8](repeating: 0, count: 512)
        while phase == .udp {
            switch (try? sink.withUnsafeMutableBytes { try socket.read(into: $0) }) ?? .done(0) {
            case .wouldBlock: return
            case .done(0): return close(reset: false, why: "UDP association's control connection closed")
            case .done: continue
            }
        }
    }

    // MARK: opening the stream

    /// Opens the stream; `answer` is called with the outcome and says what to write to the client.
    func open(_ destination: Destination, answer: @escaping (Result<Void, OpenFailure>) -> [UInt8]?) {
        self.answer = answer
        phase = .opening
        do {
            stream = try server.upstream.openStream(to: destination, handler: self)
            Log.debug("\(peer) → \(destination)", "proxy")
        } catch {
            Log.debug("\(peer) → \(destination): no carrier is up", "proxy")
            finishOpening(.failure(.unavailable))
        }
    }

    func upstreamStreamDidOpen(_ stream: UpstreamStream) { finishOpening(.success(())) }

    private func finishOpening(_ result: Result<Void, OpenFailure>) {
        let reply = answer?(result)
        answer = nil
        if let reply, !writeNow(reply) { return }
        guard case .success = result else {
            stream = nil
            return close(reset: false, why: "refused")
        }
        phase = .joined
        pumpToUpstream()
    }

    /// Writes a reply the client is waiting for: a few hundred bytes at most, which a socket that has
    /// sent nothing yet always takes whole.
    func writeNow(_ bytes: [UInt8]) -> Bool {
        guard case .done(let n)? = try? bytes.withUnsafeBytes({ try socket.write($0) }), n == bytes.count else {
            close(reset: true, why: "could not write its reply")
            return false
        }
        return true
    }

    // MARK: client -> relay

    func upstreamStreamCanSend(_ stream: UpstreamStream) { pumpToUpstream() }

    private func pumpToUpstream() {
        guard phase == .joined, let stream else { return }
        // First what arrived with the handshake (a pipelined request, a rewritten HTTP head).
        while !inbound.isEmpty {
            let taken = stream.send(inbound.readableBytes)
            inbound.consume(taken)
            if !inbound.isEmpty { return }  // upstreamStreamCanSend brings us back
        }
        while readable && !clientEOF && phase == .joined {
            let room = min(stream.worthwhileSendCapacity, server.scratch.count)
            if room == 0 {
                stream.notifyWhenSendable()
                return
            }
            let result: IOResult<Int>
            do {
                result = try server.scratch.withUnsafeMutableBytes { try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<room])) }
            } catch {
                stream.reset()
                self.stream = nil
                return close(reset: true, why: "\(error)")
            }
            switch result {
            case .wouldBlock:
                readable = false
            case .done(0):
                clientEOF = true
            case .done(let n):
                let sent = server.scratch.withUnsafeBytes { stream.send(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                assert(sent == n, "send capacity was checked")
            }
        }
        if clientEOF && inbound.isEmpty && !sentFIN {
            sentFIN = true
            stream.finish()
            closeIfDone()
        }
    }

    // MARK: relay -> client

    func upstreamStream(_ stream: UpstreamStream, didReceive data: UnsafeRawBufferPointer) {
        var written = 0
        if outbound.isEmpty && writable {
            switch (try? socket.write(data)) ?? .done(-1) {
            case .done(let n) where n >= 0: written = n
            case .done:
                stream.reset()
                self.stream = nil
                return close(reset: true, why: "write to the client failed")
            case .wouldBlock: writable = false
            }
        }
        if written < data.count { outbound.append(UnsafeRawBufferPointer(rebasing: data[written...])) }
        if written > 0 { stream.consumed(written) }
    }

    private func flushToClient() {
        var total = 0
        while writable && !outbound.isEmpty {
            switch (try? socket.write(outbound.readableBytes)) ?? .done(-1) {
            case .done(let n) where n >= 0:
                outbound.consume(n)
                total += n
            case .done:
                stream?.reset()
                stream = nil
                return close(reset: true, why: "write to the client failed")
            case .wouldBlock:
                writable = false
            }
        }
        if total > 0 { stream?.consumed(total) }
        if outbound.isEmpty && upstreamFIN { finishTowardClient() }
    }

    func upstreamStreamDidReceiveFIN(_ stream: UpstreamStream) {
        upstreamFIN = true
        if outbound.isEmpty { finishTowardClient() }
    }

    private func finishTowardClient() {
        guard phase == .joined else { return }
        if closeAfterResponse {
            // HTTP absolute-form: the origin closed after its response (we asked it to); so do we.
            if !sentFIN {
                sentFIN = true
                stream?.finish()
            }
            stream?.handler = nil
            stream = nil
            return close(reset: false, why: "response complete")
        }
        socket.shutdownWrite()
        closeIfDone()
    }

    private func closeIfDone() {
        if sentFIN && upstreamFIN && outbound.isEmpty { close(reset: false, why: nil) }
    }

    func upstreamStream(_ stream: UpstreamStream, didEnd reason: ResetReason, message: String) {
        self.stream = nil
        if phase == .opening {
            Log.debug("\(peer): refused by the relay: \(reason) \(message)", "proxy")
            return finishOpening(.failure(.refused(reason)))
        }
        close(reset: true, why: "reset by the relay (\(reason))")
    }

    // MARK: the end

    func close(reset: Bool, why: String?) {
        guard phase != .done else { return }
        phase = .done
        if let why { Log.debug("\(peer): \(why)", "proxy") }
        stream?.reset()
        stream = nil
        udpRelay?.close()
        udpRelay = nil
        server.loop.forgetBeforeClose(fd: socket.fd)
        if reset { socket.closeWithReset() } else { socket.close() }
        inbound.removeAll()
        outbound.removeAll()
        server.connectionEnded(self)
    }

    func startUDP(_ relay: SocksUDPRelay) {
        udpRelay = relay
        phase = .udp
        readControl()
    }
}
