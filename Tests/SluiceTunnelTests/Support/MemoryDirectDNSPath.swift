import SluiceLoop
import SluiceTunnel
import SluiceWire

/// The in-memory `DirectDNSPath`: every address bypasses the tunnel unless listed in `tunnelled`;
/// queries are recorded, and `answer` writes an answer back through the engine, as a host's socket
/// would on a reply.
final class MemoryDirectDNSPath: DirectDNSPath {
    var tunnelled: Set<IPAddress> = []
    private(set) var sent: [(from: SocketEndpoint, to: SocketEndpoint, payload: [UInt8])] = []
    private var deliver: ((UnsafeRawBufferPointer, SocketEndpoint, SocketEndpoint) -> Void)?
    private(set) var stopped = false

    func start(on loop: EventLoop, answer: @escaping (UnsafeRawBufferPointer, SocketEndpoint, SocketEndpoint) -> Void) {
        deliver = answer
    }

    func bypassesTunnel(_ address: IPAddress) -> Bool { !tunnelled.contains(address) }

    func send(_ payload: UnsafeRawBufferPointer, from application: SocketEndpoint, to destination: SocketEndpoint) -> Bool {
        sent.append((application, destination, Array(payload)))
        return true
    }

    /// An answer from `source` to `application`, as the host's socket received it.
    func answer(_ payload: [UInt8], from source: SocketEndpoint, to application: SocketEndpoint) {
        payload.withUnsafeBytes { deliver?($0, source, application) }
    }

    func stop() { stopped = true }
}
