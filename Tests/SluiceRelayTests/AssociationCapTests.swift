import Glibc
import SluiceCrypto
import SluiceLoop
import SluiceMux
import SluiceWire
import XCTest

@testable import SluiceRelay

/// A relay worker at a client's UDP-mapping cap (`--max-udp-mappings`): the new association's
/// datagram leaves first, then the longest-idle association is evicted in the same turn — unless
/// the client ended one of its own meanwhile, which leaves it within its cap.
final class AssociationCapTests: XCTestCase {
    private var loop: EventLoop!
    private var worker: RelayWorker!
    private var pair: SessionPair!
    /// Where the associations send: a UDP socket on loopback, read without blocking.
    private var destinationFD: Int32 = -1
    private var destination: SocketEndpoint!
    private var clients: [Recorder] = []

    override func setUpWithError() throws {
        loop = try EventLoop()
        let key = PrivateKey.generate()
        var settings = RelaySettings(listen: SocketEndpoint(address: IPAddress("127.0.0.1")!, port: 0), privateKey: PrivateKey.generate(),
                                     allowedClients: [key.publicKey], psk: nil, maxStreamsPerClient: 8, handshakeTimeoutMilliseconds: 1000)
        settings.maxUDPMappingsPerClient = 2
        settings.destinationPolicy = DestinationPolicy(allow: [IPPrefix("127.0.0.1/32")!])
        worker = RelayWorker(index: 0, settings: settings, limits: ClientLimits(workers: 1),
                             growth: WindowGrowthPool(bytes: RelaySettings.defaultWindowGrowthPoolBytes), load: WorkerLoad(),
                             pathSocket: nil, loop: loop)
        pair = SessionPair()
        let client = ClientID(key: key.publicKey)
        pair.relayCarrier.onRequest = { [unowned self] stream, to in worker.open(stream, to: to, client: client) }

        destinationFD = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        XCTAssertEqual(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(destinationFD, $0, length) } }, 0)
        XCTAssertEqual(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(destinationFD, $0, &length) } }, 0)
        destination = SocketEndpoint(address: IPAddress("127.0.0.1")!, port: UInt16(bigEndian: address.sin_port))
    }

    override func tearDown() {
        worker.shutdown()
        pair.relay.close(.closed, message: "test over")
        close(destinationFD)
    }

    /// One loop turn, without waiting for events: the worker's batched datagrams go out, then what
    /// waits for the turn's output.
    private func turn() {
        loop.afterTurn { self.loop.stop() }
        loop.run()
    }

    /// Opens an association on the client and sends `payload` on it; the relay reads both (no turn yet).
    @discardableResult
    private func open(sending payload: String) throws -> (stream: MuxStream, recorder: Recorder) {
        let recorder = Recorder()
        clients.append(recorder)
        let stream = pair.client.openAssociation(to: Destination(destination), handler: recorder)
        XCTAssertTrue([UInt8](payload.utf8).withUnsafeBytes { stream.sendDatagram($0, endpoint: destination) })
        try pair.pump()
        return (stream, recorder)
    }

    /// The datagrams the destination received so far, oldest first.
    private func received() -> [String] {
        var all: [String] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = recv(destinationFD, &buffer, buffer.count, 0)
            guard n >= 0 else { return all }
            all.append(String(decoding: buffer[0..<n], as: UTF8.self))
        }
    }

    func testTheNewAssociationsDatagramLeavesThenTheLongestIdleIsEvicted() throws {
        let first = try open(sending: "one")
        let second = try open(sending: "two")
        turn()
        XCTAssertEqual(received(), ["one", "two"])

        try open(sending: "three")
        var atTheTurnsOutput: (sent: [String], live: Int)?
        let hook = loop.addEndOfTurnHook { [unowned self] in
            if atTheTurnsOutput == nil { atTheTurnsOutput = (received(), worker.associations.count) }
        }
        turn()
        loop.removeEndOfTurnHook(hook)
        XCTAssertEqual(atTheTurnsOutput?.sent, ["three"], "the new association's datagram went out in its turn")
        XCTAssertEqual(atTheTurnsOutput?.live, 3, "with the association it evicts still open then")
        XCTAssertEqual(worker.associations.count, 2, "the eviction followed in the same turn")
        try pair.pump()
        XCTAssertEqual(first.recorder.reset?.0, .timedOut, "the longest idle was evicted")
        XCTAssertNil(second.recorder.reset)
        XCTAssertTrue(first.stream.isClosed)
    }

    func testAClientThatEndedOneOfItsOwnMeanwhileKeepsTheRest() throws {
        let first = try open(sending: "one")
        let second = try open(sending: "two")
        turn()
        try open(sending: "three")
        first.stream.reset(.closed, message: "the application closed its socket")
        try pair.pump()
        turn()
        try pair.pump()
        XCTAssertEqual(worker.associations.count, 2, "the client is within its cap again")
        XCTAssertNil(second.recorder.reset, "no association was evicted")
        XCTAssertEqual(received(), ["one", "two", "three"])
    }
}

/// The client end of an association: what reset it, if anything did.
private final class Recorder: MuxStreamHandler {
    var reset: (ResetReason, String)?
    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) { reset = (reason, message) }
}
