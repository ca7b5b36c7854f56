import SluiceMux
import SluiceWire
import XCTest

@testable import SluiceRelay

/// The relay's built-in bench endpoints (docs/protocol.md §7) over two real mux sessions.
final class BenchEndpointTests: XCTestCase {
    private var pair: SessionPair!
    private var endpoints: [BenchEndpoint] = []
    private var ended: [BenchEndpoint] = []
    private var benchEnabled = true

    /// Wires the relay session as `RelayServer.open` does: the route decides, a `BenchEndpoint`
    /// serves, a refusal is a RESET.
    /// Windows do not grow here, at either end (`maxStreamWindow`): the tests count credit in exact
    /// windows; growth has its own tests (ReceiveWindowGrowthTests, RelayWindowTests).
    private func makePair(clientWindow: Int = MuxSettings().streamWindow) {
        var settings = MuxSettings()
        settings.streamWindow = clientWindow
        settings.maxStreamWindow = clientWindow
        var relay = MuxSettings()
        relay.maxStreamWindow = relay.streamWindow
        pair = SessionPair(client: settings, relay: relay)
        pair.relayCarrier.onRequest = { [unowned self] stream, destination in
            switch BenchEndpoint.route(destination, enabled: self.benchEnabled) {
            case .destination:
                XCTFail("\(destination) is not the bench host")
            case .serve(let service):
                let endpoint = BenchEndpoint(stream: stream, service: service) { [unowned self] in self.ended.append($0) }
                self.endpoints.append(endpoint)
                endpoint.start()
            case .refuse(let reason, let message):
                stream.reset(reason, message: message)
            }
        }
    }

    private func open(_ destination: Destination, handler: ClientEnd) throws -> MuxStream {
        let stream = pair.client.open(to: destination, handler: handler)
        try pair.pump()
        return stream
    }

    func testRoutes() {
        let bench = { (name: String, port: UInt16) in Destination(host: .domain(name), port: port) }
        XCTAssertEqual(BenchEndpoint.route(bench("bench.sluice.invalid", 9), enabled: true), .serve(.discard))
        XCTAssertEqual(BenchEndpoint.route(bench("bench.sluice.invalid", 19), enabled: true), .serve(.chargen))
        XCTAssertEqual(BenchEndpoint.route(bench("Bench.Sluice.INVALID.", 19), enabled: true), .serve(.chargen))
        XCTAssertEqual(BenchEndpoint.route(bench("example.com", 9), enabled: true), .destination)
        XCTAssertEqual(BenchEndpoint.route(bench("bench.sluice.invalid.example.com", 9), enabled: false), .destination)
        XCTAssertEqual(BenchEndpoint.route(Destination(host: .ip(IPAddress("192.0.2.1")!), port: 9), enabled: true), .destination)
        guard case .refuse(.refused, let other) = BenchEndpoint.route(bench("bench.sluice.invalid", 7), enabled: true) else {
            return XCTFail("port 7 is not served")
        }
        XCTAssertTrue(other.contains("port 9") && other.contains("port 19"), other)
        guard case .refuse(.unreachable, let off) = BenchEndpoint.route(bench("bench.sluice.invalid", 9), enabled: false) else {
            return XCTFail("--no-bench must refuse")
        }
        XCTAssertTrue(off.contains("--no-bench"), off)
    }

    func testSinkDiscardsAndReturnsEveryByteAsCredit() throws {
        makePair()
        let handler = ClientEnd()
        let window = MuxSettings().streamWindow
        handler.toSend = 5 * window + 12_345  // several windows: only returned credit lets it through
        let stream = try open(BenchService.discard.destination, handler: handler)
        XCTAssertTrue(handler.opened, "OPEN_OK at once, without a destination")
        try pair.pump()
        XCTAssertEqual(handler.sent, handler.toSend)
        XCTAssertEqual(endpoints.first?.bytesIn, handler.toSend)
        XCTAssertEqual(endpoints.first?.bytesOut, 0)
        XCTAssertGreaterThan(stream.sendCredit, window - window / 4, "less than a quarter window of credit is held back")

        stream.finish()
        try pair.pump()
        XCTAssertTrue(handler.receivedFIN, "the relay answers FIN with FIN")
        XCTAssertEqual(stream.sendCredit, window, "the relay's FIN follows all its credit: it consumed every byte")
        XCTAssertTrue(stream.isClosed)
        XCTAssertEqual(ended.count, 1)
        XCTAssertEqual(pair.relay.streamCount, 0)
    }

    func testSourceNeverSendsBeyondTheWindow() throws {
        let window = 64 * 1024
        makePair(clientWindow: window)
        let handler = ClientEnd()  // reads nothing yet: no credit goes back
        let stream = try open(BenchService.chargen.destination, handler: handler)
        try pair.pump()
        XCTAssertEqual(handler.received.count, window, "exactly one window, then it waits")
        XCTAssertEqual(endpoints.first?.bytesOut, window)

        stream.consumed(window / 4)  // one quarter-window of credit
        try pair.pump()
        XCTAssertEqual(handler.received.count, window + window / 4)
        XCTAssertEqual(endpoints.first?.bytesOut, window + window / 4)

        // The bytes are RFC 864's pattern, continuous across sends.
        let expected = (0..<handler.received.count).map { BenchService.pattern[$0 % BenchService.patternPeriod] }
        XCTAssertTrue(handler.received == expected)
        XCTAssertEqual(Array(handler.received[0..<4]), Array(" !\"#".utf8))
        XCTAssertEqual(Array(handler.received[72..<76]), [13, 10] + Array("!\"".utf8))
    }

    func testSourceWaitsForTheCarrierBudget() throws {
        makePair()
        pair.relayCarrier.extraQueued = pair.relay.settings.carrierBudget  // the relay's socket is full
        let handler = ClientEnd()
        _ = try open(BenchService.chargen.destination, handler: handler)
        XCTAssertTrue(handler.opened)
        XCTAssertEqual(endpoints.first?.bytesOut, 0, "no budget, nothing queued")

        pair.relayCarrier.extraQueued = 0
        pair.relay.carrierDrained()  // the socket took its bytes
        try pair.pump()
        XCTAssertEqual(endpoints.first?.bytesOut, MuxSettings().streamWindow, "it runs once the carrier drains")
        XCTAssertEqual(handler.received.count, endpoints.first?.bytesOut)
    }

    func testSourceStopsAtTheClientsFIN() throws {
        makePair()
        let window = MuxSettings().streamWindow
        let handler = ClientEnd()
        let stream = try open(BenchService.chargen.destination, handler: handler)
        XCTAssertEqual(handler.received.count, window)
        stream.consumed(window)  // credit for one more window, then FIN in the same record
        stream.finish()
        try pair.pump()
        XCTAssertTrue(handler.receivedFIN)
        XCTAssertTrue(stream.isClosed)
        XCTAssertEqual(ended.count, 1)
        XCTAssertEqual(endpoints.first?.bytesOut, 2 * window, "the credit before the FIN was used, nothing after it")
        XCTAssertEqual(handler.received.count, 2 * window, "everything sent arrived before the relay's FIN")
    }

    func testSourceStopsAtReset() throws {
        makePair()
        let handler = ClientEnd()
        let stream = try open(BenchService.chargen.destination, handler: handler)
        stream.reset(.closed)
        try pair.pump()
        XCTAssertEqual(ended.count, 1)
        XCTAssertEqual(pair.relay.streamCount, 0)
    }

    func testUnknownPortIsRefused() throws {
        makePair()
        let handler = ClientEnd()
        _ = try open(Destination(host: .domain(BenchService.hostName), port: 7), handler: handler)
        XCTAssertFalse(handler.opened)
        XCTAssertEqual(handler.reset?.0, .refused)
        XCTAssertTrue(endpoints.isEmpty)
    }

    func testNoBenchRefusesBoth() throws {
        benchEnabled = false
        makePair()
        for service in BenchService.allCases {
            let handler = ClientEnd()
            _ = try open(service.destination, handler: handler)
            XCTAssertFalse(handler.opened)
            XCTAssertEqual(handler.reset?.0, .unreachable)
            XCTAssertTrue(handler.reset?.1.contains("--no-bench") ?? false)
        }
        XCTAssertTrue(endpoints.isEmpty)
    }
}
