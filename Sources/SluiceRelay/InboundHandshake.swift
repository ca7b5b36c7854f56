import Glibc
import SluiceCarrier
import SluiceCrypto
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceProxyProtocol
import SluiceSystem

/// A freshly accepted connection until it proves itself with Noise message 1. Loop-confined.
///
/// Silence on failure: whatever fails — garbage, an unknown key, a replayed timestamp — the relay
/// sends nothing back. It keeps reading and discarding until the handshake timeout (or a reset from
/// the peer), logs one line, and closes, so a scanner cannot tell a Sluice relay from a port that
/// swallows bytes.
///
/// Behind a load balancer (`--proxy-protocol`) the balancer's PROXY protocol header comes first,
/// within the same timeout: it is peeked at until whole and then read by its exact length, so the
/// handshake's bytes after it stay in the socket. From then on the client it names is the peer the
/// logs, `sluice status` and the carrier's label show. A connection without a valid header fails
/// like a bad handshake: silence, then close.
final class InboundHandshake: IdleListMember {
    let socket: Socket
    /// The client's address and port: the connection's, or the one a PROXY header names.
    private var peer: String
    private unowned let relay: RelayServer
    private unowned let loop: EventLoop
    private var message = [UInt8]()
    private var failure: String?
    /// Set when `failure` is a missing or broken PROXY protocol header (counted apart).
    private var failedHeader = false
    /// True until the PROXY protocol header is read (with `--proxy-protocol`).
    private var awaitingProxyHeader: Bool
    /// Bytes received so far, not counting a PROXY header: a connection that sent none is a port
    /// check (HAProxy's health checks send a header with its LOCAL command, then close).
    private var received = 0
    private var timer: LoopTimer?
    private var done = false
    var idleListEntry: IdleListEntry?

    init(socket: Socket, peer: String, relay: RelayServer, loop: EventLoop) {
        self.socket = socket
        self.peer = peer
        self.relay = relay
        self.loop = loop
        awaitingProxyHeader = relay.settings.proxyProtocol
    }

    func start() {
        do {
            try loop.register(fd: socket.fd, events: [.readable, .readHangup, .edgeTriggered]) { [unowned self] _ in self.readAvailable() }
        } catch {
            Log.warning("\(error)", "relay")
            finish(close: true)
            return
        }
        timer = loop.schedule(afterMilliseconds: relay.settings.handshakeTimeoutMilliseconds) { [weak self] in
            guard let self, !self.done else { return }
            let timeout = self.relay.settings.handshakeTimeoutMilliseconds
            let why = self.failure ?? (self.awaitingProxyHeader
                ? "no complete PROXY protocol header within \(timeout) ms (\(self.received) bytes received)"
                : "no complete handshake within \(timeout) ms (\(self.message.count) bytes received)")
            self.fail(why)
        }
    }

    /// Closes without a word (relay shutdown, or the pending-handshake cap).
    func abandon() { finish(close: true) }

    private func readAvailable() {
        while !done {
            if awaitingProxyHeader {
                guard readProxyHeader() else { return }
                continue
            }
            // The relay's shared buffer: a pending handshake holds no buffer of its own.
            let want = failure == nil ? SluiceHandshake.message1Length - message.count : relay.scratch.count
            let result: IOResult<Int>
            do {
                result = try relay.scratch.withUnsafeMutableBytes { try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want])) }
            } catch {
                // The peer is gone (a reset): nothing it could learn from when the socket closes.
                fail(failure ?? "\(error)")
                return
            }
            switch result {
            case .wouldBlock:
                return
            case .done(0):
                fail(failure ?? "connection closed after \(message.count) bytes")
                return
            case .done(let n):
                received += n
                guard failure == nil else { continue }  // discard
                message.append(contentsOf: relay.scratch[0..<n])
                if message.count == SluiceHandshake.message1Length { respond() }
            }
        }
    }

    /// Looks at what has arrived for a whole PROXY protocol header and reads exactly that. True when
    /// reading goes on (the header is read, or it is broken and the rest is discarded); false to
    /// wait for more bytes (or the connection closed).
    private func readProxyHeader() -> Bool {
        let result: IOResult<Int>
        do {
            result = try relay.scratch.withUnsafeMutableBytes {
                try socket.peek(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<ProxyHeader.maximumLength]))
            }
        } catch {
            fail("\(error)")  // the peer is gone, as above
            return false
        }
        switch result {
        case .wouldBlock:
            return false
        case .done(0):
            fail("connection closed before a complete PROXY protocol header (\(received) bytes received)")
            return false
        case .done(let n):
            received = n
            let decoded: (header: ProxyHeader, length: Int)?
            do {
                decoded = try relay.scratch.withUnsafeBytes { buffer throws(ProxyHeaderError) in
                    try ProxyHeader.decode(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                }
            } catch {
                failure = "\(error)"
                failedHeader = true
                awaitingProxyHeader = false
                return true
            }
            guard let decoded else { return false }  // a part of it: wait for the rest
            // Peeked, so these bytes are there: the read takes exactly them.
            _ = relay.scratch.withUnsafeMutableBytes { try? socket.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<decoded.length])) }
            awaitingProxyHeader = false
            received = 0
            if let client = decoded.header.addresses?.source {
                Log.debug("connection from \(peer) relays the client \(client) (PROXY protocol \(decoded.header.version))", "relay")
                peer = "\(client)"
            }
            return true
        }
    }

    private func respond() {
        let settings = relay.settings
        do {
            let outcome = try relay.responder.respond(
                to: message, isAllowed: { settings.allowedClients.contains($0) }, replayGuard: relay.replayGuard)
            // Message 2 is 64 bytes on a fresh socket: its send buffer always has room.
            let written = outcome.message2.withUnsafeBytes { try? socket.write($0) }
            guard case .done(outcome.message2.count)? = written else {
                fail("could not send the response")
                return
            }
            finish(close: false)
            relay.carrierEstablished(socket: socket, keys: outcome.keys, client: outcome.client, peer: peer)
        } catch {
            failure = "\(error)"
            message.removeAll()
        }
    }

    /// Logs why, counts it and closes without a reply. A connection that sent nothing (but perhaps a
    /// PROXY header) is a port check — a balancer's health check, a scanner: a debug line and an
    /// event, not a failure.
    private func fail(_ why: String) {
        if received == 0 {
            Log.debug("connection from \(peer) closed without sending anything", "relay")
            relay.counters.emptyConnections += 1
        } else {
            Log.info("handshake from \(peer) failed: \(why); closed without reply", "relay")
            if failedHeader { relay.counters.proxyHeadersInvalid += 1 } else { relay.counters.handshakesFailed += 1 }
        }
        finish(close: true)
    }

    private func finish(close: Bool) {
        guard !done else { return }
        done = true
        timer?.cancel()
        loop.deregister(fd: socket.fd)
        if close { socket.close() }
        relay.handshakeFinished(self)
    }
}
