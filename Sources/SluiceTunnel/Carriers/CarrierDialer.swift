import Glibc
import SluiceCarrier
import SluiceCrypto
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceWire

/// Connects one carrier: TCP connect through the target's `CarrierTransport`, Noise message 1,
/// message 2 within the handshake timeout. Loop-confined; reports exactly once.
///
/// A relay answers a client it refuses (unknown key, wrong PSK) with silence, so the timeout's
/// failure names those causes (`DialFailure.silence`).
public final class CarrierDialer {
    public enum Outcome {
        case established(Socket, SluiceAcceptance)
        case failed(DialFailure)
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

    public init(target: CarrierTarget, loop: EventLoop, completion: @escaping (Outcome) -> Void) {
        self.target = target
        self.loop = loop
        self.completion = completion
    }

    public func start() {
        do {
            let s = try target.transport.connect(to: target.relay)
            socket = s
            try loop.register(fd: s.fd, events: [.readable, .writable, .readHangup, .edgeTriggered]) { [unowned self] in self.handle($0) }
        } catch {
            fail(.connect(relay: target.relay, error))
            return
        }
        timer = loop.schedule(afterMilliseconds: Self.timeoutMilliseconds) { [weak self] in
            guard let self else { return }
            let seconds = Self.timeoutMilliseconds / 1000
            self.fail(self.connected ? .silence(seconds: seconds) : .connectTimedOut(relay: self.target.relay, seconds: seconds))
        }
    }

    /// Stops without reporting (client shutdown).
    public func cancel() {
        completion = nil
        cleanup(closeSocket: true)
    }

    private func handle(_ events: IOEvents) {
        guard let socket, completion != nil else { return }
        if !connected {
            guard events.contains(.writable) || events.contains(.error) || events.contains(.hangup) else { return }
            let err = socket.pendingError()
            guard err == 0 else {
                fail(.connect(relay: target.relay, SystemError("", code: err)))
                return
            }
            connected = true
            do {
                let initiator = try SluiceInitiator(localStatic: target.privateKey, relayStatic: target.relayPublicKey, psk: target.psk)
                let message = initiator.message1
                self.initiator = initiator
                // Message 1 is 125 bytes on a freshly connected socket: its send buffer has room.
                switch try message.withUnsafeBytes({ try socket.write($0) }) {
                case .done(message.count): break
                default:
                    fail(.connect(relay: target.relay, SystemError("send the handshake", code: EAGAIN)))
                    return
                }
            } catch {
                fail(because: error)
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
                fail(because: error)
                return
            }
            switch result {
            case .wouldBlock: return
            case .done(0):
                fail(.closedWithoutResponse)
                return
            case .done(let n):
                response.append(contentsOf: scratch[0..<n])
                guard response.count == SluiceHandshake.message2Length, let initiator else { continue }
                do {
                    let accepted = try initiator.finish(message2: response)
                    let done = completion
                    completion = nil
                    cleanup(closeSocket: false)
                    done?(.established(socket, accepted))
                } catch {
                    fail(.handshake("\(error)"))
                }
                return
            }
        }
    }

    /// A socket call failed (the connection is broken) or the handshake could not be made.
    private func fail(because error: any Error) {
        fail((error as? SystemError).map { .connect(relay: target.relay, $0) } ?? .handshake("\(error)"))
    }

    private func fail(_ why: DialFailure) {
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
