import Glibc
import SluiceCrypto
import SluiceLoop
import SluiceMux
import SluiceWire
import XCTest

@testable import SluiceRelay

/// A relay worker at a client's UDP-mapping cap (`--max-udp-mappings`): a new association evicts the
/// longest idle before it sends, so the client never holds more than its cap here; a request to evict
/// that arrives once the client is within its cap again (another worker's, sent before one of the
/// client's associations ended) evicts nothing.
final class AssociationCapTests: XCTestCase {
    private var loop: EventLoop!
    private var worker: RelayWorker!
    private var pair: SessionPair!
    /// Where the associations send: a UDP socket on loopback, read without blocking.
    private var destinationFD: Int32 = -1
    private var destination: SocketEndpoint!
    private var client: ClientID!

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
        client = ClientID(key: key.publicKey)
        pair.relayCarrier.onRequest = { [unowned self] stream, to in worker.open(stream, to: to, client: client) }

        (destinationFD, destination) = loopbackUDPSocket()
    }

    override func tearDown() {
        worker.shutdown()
        pair.relay.close(.closed, message: "test over")
        close(destinationFD)
    }

    /// Opens an association on the client and sends `payload` on it; the relay reads both (no turn yet).
    @discardableResult
    private func open(sending payload: String) throws -> (stream: MuxStream, recorder: Recorder) {
        let recorder = Recorder()
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

    func testANewAssociationAtTheCapEvictsTheLongestIdleBeforeItSends() throws {
        let first = try open(sending: "one")
        let second = try open(sending: "two")
        runOneTurn(loop)
        XCTAssertEqual(received(), ["one", "two"])

        try open(sending: "three")
        XCTAssertEqual(worker.associations.count, 2, "the longest idle went as the new one opened")
        runOneTurn(loop)
        XCTAssertEqual(received(), ["three"])
        try pair.pump()
        XCTAssertEqual(first.recorder.reset?.0, .timedOut, "the longest idle was evicted")
        XCTAssertTrue(first.stream.isClosed)
        XCTAssertNil(second.recorder.reset)
    }

    func testARequestToEvictFindingTheClientWithinItsCapEvictsNothing() throws {
        let first = try open(sending: "one")
        let second = try open(sending: "two")
        runOneTurn(loop)
        first.stream.reset(.closed, message: "the application closed its socket")
        try pair.pump()
        XCTAssertEqual(worker.associations.count, 1)

        // As another worker asks when a new association there put the client over its cap.
        worker.evictOldestMapping(of: client)
        try pair.pump()
        XCTAssertEqual(worker.associations.count, 1, "the client is within its cap: nothing is evicted")
        XCTAssertNil(second.recorder.reset)
    }
}

/// The client end of an association: what reset it, if anything did.
private final class Recorder: MuxStreamHandler {
    var reset: (ResetReason, String)?
    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) { reset = (reason, message) }
}
