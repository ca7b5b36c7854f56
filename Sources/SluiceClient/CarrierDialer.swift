import Glibc
import SluiceCarrier
import SluiceCrypto
import SluiceHost
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceWire

/// Connects one carrier: TCP connect (for `up`, the socket marked so it never routes into the TUN),
/// Noise message 1, message 2 within the handshake timeout. Loop-confined; reports exactly once.
///
/// A relay answers a client it refuses (unknown key, wrong PSK) with silence, so the timeout's message
/// names those causes.
final class CarrierDialer {
    enum Outcome {
        case established(Socket, SluiceAcceptance)
        case failed(String)
    }

    static let timeoutMilliseconds: UInt64 = 5_000

    private unowned let loop: EventLoop
    private let target: CarrierTarget
    private var socket: Socket?
    private var initiator: SluiceInitiator?
    private var response = [UInt8]()
    private var connected = false
    private var timer: LoopTimer?
    private var completion: ((Outcome) -> Void)?
    private var scratch = [UInt8](repeating: 0, count: SluiceHandshake.message2Length)

    init(target: CarrierTarget, loop: EventLoop, completion: @escaping (Outcome) -> Void) {
        self.target = target
        self.loop = loop
        self.completion = completion
    }

    func start() {
        do {
            let s = try Socket.tcp(for: target.relay.address)
            socket = s
            if let mark = target.fwmark { try SocketMark.set(mark, on: s.fd) }
            s.setNoDelay()
            try s.connect(to: target.relay)
            try loop.register(fd: s.fd, events: [.readable, .writable, .readHangup, .edgeTriggered]) { [unowned self] in self.handle($0) }
        } catch {
            fail("\(error)")
            return
        }
        timer = loop.schedule(afterMilliseconds: Self.timeoutMilliseconds) { [weak self] in
            guard let self else { return }
            self.fail(self.connected ? Self.silenceMessage : "connect to \(self.target.relay) timed out after \(Self.timeoutMilliseconds / 1000) s")
        }
    }

    /// Why the relay might say nothing: it refuses unauthenticated clients silently, and closes after its
    /// own handshake timeout (docs/protocol.md §1).
    static let silenceHint = "the relay answers a client it refuses with silence — check the relay public key, that this "
        + "client's public key is in the relay's --allow-client list, and that both use the same --psk (or none)"
    static let silenceMessage = "no handshake response within \(timeoutMilliseconds / 1000) s: " + silenceHint

    /// Stops without reporting (client shutdown).
    func cancel() {
        completion = nil
        cleanup(closeSocket: true)
    }

    private func handle(_ events: IOEvents) {
        guard let socket, completion != nil else { return }
        if !connected {
            guard events.contains(.writable) || events.contains(.error) || events.contains(.hangup) else { return }
            let err = socket.pendingError()
            guard err == 0 else {
                fail("connect to \(target.relay): \(SystemError.message(err)) (\(SystemError.name(err)))")
                return
            }
            connected = true
            do {
                let initiator = try SluiceInitiator(localStatic: target.privateKey, relayStatic: target.relayPublicKey, psk: target.psk)
                let message = initiator.message1
                self.initiator = initiator
                guard case .done(message.count)? = message.withUnsafeBytes({ try? socket.write($0) }) else {
                    fail("could not send the handshake")
                    return
                }
            } catch {
                fail("\(error)")
                return
            }
        }
        if events.contains(.readable) || events.contains(.readHangup) || events.contains(.hangup) || events.contains(.error) { readResponse() }
    }

    private func readResponse() {
        guard let socket else { return }
        while completion != nil {
            let want = SluiceHandshake.message2Length - response.count
            let result: IOResult<Int>
            do {
                result = try scratch.withUnsafeMutableBytes { try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want])) }
            } catch {
                fail("\(error)")
                return
            }
            switch result {
            case .wouldBlock: return
            case .done(0):
                fail("the relay closed the connection without a handshake response: " + Self.silenceHint)
                return
            case .done(let n):
                response.append(contentsOf: scratch[0..<n])
                guard response.count == SluiceHandshake.message2Length else { continue }
                do {
                    let accepted = try initiator!.finish(message2: response)
                    let done = completion
                    completion = nil
                    cleanup(closeSocket: false)
                    done?(.established(socket, accepted))
                } catch {
                    fail("handshake response rejected: \(error)")
                }
                return
            }
        }
    }

    private func fail(_ why: String) {
        let done = completion
        completion = nil
        cleanup(closeSocket: true)
        done?(.failed(why))
    }

    private func cleanup(closeSocket: Bool) {
        timer?.cancel()
        if let socket {
            loop.deregister(fd: socket.fd)
            if closeSocket { socket.close() }
        }
        socket = nil
    }
}
