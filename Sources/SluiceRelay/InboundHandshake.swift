import Glibc
import SluiceCarrier
import SluiceCrypto
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceSystem

/// A freshly accepted connection until it proves itself with Noise message 1. Loop-confined.
///
/// Silence on failure: whatever fails — garbage, an unknown key, a replayed timestamp — the relay
/// sends nothing back. It keeps reading and discarding until the handshake timeout, logs one line,
/// and closes, so a scanner cannot tell a Sluice relay from a port that swallows bytes.
final class InboundHandshake {
    let socket: Socket
    private let peer: String
    private unowned let relay: RelayServer
    private unowned let loop: EventLoop
    private var message = [UInt8]()
    private var failure: String?
    private var timer: LoopTimer?
    private var done = false

    init(socket: Socket, peer: String, relay: RelayServer, loop: EventLoop) {
        self.socket = socket
        self.peer = peer
        self.relay = relay
        self.loop = loop
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
            let why = self.failure ?? "no complete handshake within \(self.relay.settings.handshakeTimeoutMilliseconds) ms (\(self.message.count) bytes received)"
            Log.info("handshake from \(self.peer) failed: \(why); closed without reply", "relay")
            self.relay.counters.handshakesFailed += 1
            self.finish(close: true)
        }
    }

    /// Closes without a word (relay shutdown, or the pending-handshake cap).
    func abandon() { finish(close: true) }

    private func readAvailable() {
        while !done {
            // The relay's shared buffer: a pending handshake holds no buffer of its own.
            let want = failure == nil ? SluiceHandshake.message1Length - message.count : relay.scratch.count
            let result: IOResult<Int>
            do {
                result = try relay.scratch.withUnsafeMutableBytes { try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want])) }
            } catch {
                failure = failure ?? "\(error)"
                return  // stay silent until the timer closes it
            }
            switch result {
            case .wouldBlock:
                return
            case .done(0):
                let why = failure ?? "connection closed after \(message.count) bytes"
                Log.info("handshake from \(peer) failed: \(why); closed without reply", "relay")
                relay.counters.handshakesFailed += 1
                finish(close: true)
                return
            case .done(let n):
                guard failure == nil else { continue }  // discard
                message.append(contentsOf: relay.scratch[0..<n])
                if message.count == SluiceHandshake.message1Length { respond() }
            }
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
                Log.info("handshake from \(peer): could not send the response", "relay")
                relay.counters.handshakesFailed += 1
                finish(close: true)
                return
            }
            finish(close: false)
            relay.carrierEstablished(socket: socket, keys: outcome.keys, client: outcome.client, peer: peer)
        } catch {
            failure = "\(error)"
            message.removeAll()
        }
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
