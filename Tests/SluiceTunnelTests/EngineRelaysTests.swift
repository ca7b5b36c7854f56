import SluiceTunnel
import SluiceWire
import XCTest

/// The engine with two relays in one process: failover moves to the second when the first dies and
/// back for new flows when it returns; spread sends flows to both. (Silence — a relay that stops
/// without closing — is checked end to end with SIGSTOP, in Tests/E2E/test_relays.py.)
final class EngineRelaysTests: XCTestCase {
    private var harness: EngineHarness!
    private var echo: LoopTCPEchoServer!

    private func start(_ policy: RelayPolicy, carriers: Int = 1) throws {
        harness = try EngineHarness(upstream: .relays(2)) {
            $0.relayPolicy = policy
            $0.carriers = carriers
        }
        echo = try LoopTCPEchoServer(on: harness.host, loop: harness.loop)
    }

    override func tearDown() {
        echo?.close()
        harness?.shutdown()
        harness = nil
        super.tearDown()
    }

    /// An echo exchange on a new flow; the flow stays open (closed by the harness at the end).
    private func openFlow(file: StaticString = #filePath, line: UInt = #line) -> AppTCP {
        let app = harness.connectTCP(to: echo.endpoint)
        app.write(Array("hello".utf8))
        XCTAssertTrue(harness.run { app.received.count == 5 }, "no echo through the tunnel", file: file, line: line)
        return app
    }

    private func endpoint(_ index: Int) -> String { "\(harness.relayServers[index].listeningEndpoint)" }

    func testFailoverMovesToTheSecondAndNewFlowsReturnToTheFirst() throws {
        try start(.failover)
        harness.waitConnected()
        let onFirst = openFlow()
        XCTAssertEqual(harness.relayStreams(0), 1)
        XCTAssertEqual(harness.engine.statistics().carriers.map(\.relay), [endpoint(0)], "no carrier to the second while the first is up")

        try harness.killRelay(0, restart: false)
        XCTAssertTrue(harness.run { onFirst.wasReset }, "the flow on the dead relay is reset at once")
        let started = harness.loop.now
        let onSecond = openFlowWhenUp()
        XCTAssertLessThan(harness.loop.now - started, 1_000, "a new flow through the second relay within a second")
        XCTAssertEqual(harness.relayStreams(1), 1)
        XCTAssertTrue(harness.events.contains { if case .relayDown(endpoint(0), _) = $0 { return true } else { return false } }, "\(harness.events)")
        XCTAssertTrue(harness.events.contains(.carrierUp(relay: endpoint(1), index: 1)))
        let down = harness.engine.statistics().relays
        XCTAssertEqual(down.map(\.health), [.down, .up])
        XCTAssertEqual(down.map(\.takesNewFlows), [false, true])

        // The first relay is back: its probe finds it within the backoff, new flows go there, the
        // flow on the second stays where it is.
        try harness.restartRelay(0)
        let relayUp = TunnelEvent.relayUp(relay: endpoint(0))
        XCTAssertTrue(harness.run(until: { [unowned self] in harness.events.filter { $0 == relayUp }.count == 2 }, timeoutMilliseconds: 5_000),
                      "up at the start, and again")
        let back = openFlow()
        XCTAssertEqual(harness.relayStreams(0), 1, "the new flow went to the first relay")
        XCTAssertFalse(onSecond.wasReset, "the flow on the second relay was left alone")
        onSecond.write(Array("still".utf8))
        XCTAssertTrue(harness.run { onSecond.received.count == 10 }, "and still works")
        let carriers = harness.engine.statistics().carriers
        XCTAssertEqual(carriers.first { $0.relay == endpoint(1) }?.state, .draining, "\(carriers)")
        _ = back

        // Once its last flow ended, the second relay's carrier closes.
        onSecond.abort()
        XCTAssertTrue(harness.run(until: { [unowned self] in harness.engine.statistics().carriers.allSatisfy { $0.relay == endpoint(0) } },
                                  timeoutMilliseconds: 3_000), "\(harness.engine.statistics().carriers)")
    }

    /// Retries a new flow until one gets through (the second relay is dialled once the first is found down).
    private func openFlowWhenUp() -> AppTCP {
        var app = harness.connectTCP(to: echo.endpoint)
        XCTAssertTrue(harness.run {
            if app.refused || app.wasReset { app = self.harness.connectTCP(to: self.echo.endpoint) }
            return app.state == .established
        })
        app.write(Array("hello".utf8))
        XCTAssertTrue(harness.run { app.received.count == 5 })
        return app
    }

    func testSpreadUsesBothRelays() throws {
        try start(.spread)
        XCTAssertTrue(harness.run { [unowned self] in harness.engine.statistics().carriers.filter { $0.state == .up }.count == 2 })
        let flows = (0..<8).map { _ in openFlow() }
        XCTAssertEqual(harness.relayStreams(0), 4, "the least loaded relay takes each new flow")
        XCTAssertEqual(harness.relayStreams(1), 4)
        XCTAssertEqual(harness.engine.statistics().relays.map(\.takesNewFlows), [true, true])
        XCTAssertEqual(harness.engine.statistics().relay, "\(endpoint(0)), \(endpoint(1)) (spread)")

        // One relay dies: its flows are reset, the other takes every new flow.
        try harness.killRelay(1, restart: false)
        XCTAssertTrue(harness.run { flows.filter(\.wasReset).count == 4 })
        _ = openFlow()
        XCTAssertEqual(harness.relayStreams(0), 5)
    }
}
