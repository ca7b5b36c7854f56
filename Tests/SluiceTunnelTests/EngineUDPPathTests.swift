import SluiceMux
import SluiceRelay
import SluiceTunnel
import SluiceWire
import SluiceTestSupport
import XCTest

/// The UDP path beside the carrier (docs/protocol.md §8), in one process: the engine and a real
/// relay validate it, carry datagrams on it, fall back to the carrier and come back (see
/// `EngineHarness`).
final class EngineUDPPathTests: XCTestCase {
    private var harness: EngineHarness!
    private var echo: LoopUDPEchoServer!
    private let app = SocketEndpoint(address: IPAddress("198.18.0.1")!, port: 5353)

    override func tearDown() {
        echo?.close()
        harness?.shutdown()
        harness = nil
        super.tearDown()
    }

    private func start(transport: FilteringTransport = FilteringTransport(), upstream: EngineHarness.Upstream = .relay,
                       relayFeatures: CarrierFeatures = .implemented, configure: (inout TunnelConfiguration) -> Void = { _ in }) throws {
        harness = try EngineHarness(upstream: upstream, transport: transport, relayFeatures: relayFeatures, configure: configure)
        echo = try LoopUDPEchoServer(on: harness.host, loop: harness.loop)
        harness.waitConnected()
    }

    private var path: UDPPathStatistics { harness.engine.statistics().udpPath! }
    private var relayEvents: [String: Int] { harness.relay.statistics().events }

    /// Sends `count` datagrams of `size` bytes one at a time, each after the previous answer; true
    /// when every answer came back intact.
    private func roundTrips(_ count: Int, size: Int = 100, seed: UInt64 = 1, from source: SocketEndpoint? = nil) -> Bool {
        for i in 0..<count {
            let payload = content(size, seed: seed &+ UInt64(i))
            let before = harness.datagrams.count
            harness.sendUDP(payload, from: source ?? app, to: echo.endpoint)
            guard harness.run(until: { [unowned self] in harness.datagrams.count > before }, timeoutMilliseconds: 3_000),
                  harness.datagrams.last?.payload == payload else { return false }
        }
        return true
    }

    func testDatagramsTravelOnTheValidatedPathBothWays() throws {
        try start()
        XCTAssertTrue(roundTrips(1), "the first datagram rides the carrier with its OPEN")
        XCTAssertTrue(harness.run(until: { [unowned self] in path.state == .up }), "the path validates on loopback")
        let before = path
        XCTAssertTrue(roundTrips(50))
        let after = path
        XCTAssertEqual(after.datagramsSent - before.datagramsSent, 50, "every request went on the path")
        XCTAssertEqual(after.datagramsReceived - before.datagramsReceived, 50, "every answer came back on it")
        XCTAssertEqual(relayEvents["udp-path-datagrams-in", default: 0], after.datagramsSent)
        XCTAssertEqual(relayEvents["udp-path-datagrams-out", default: 0], after.datagramsReceived)
        XCTAssertEqual(harness.relay.statistics().clients.first?.udpPaths, 1, "the relay counts the path as in use")
        XCTAssertGreaterThan(after.probesAnswered, 0)
        XCTAssertNotNil(after.paths.first?.rttMicroseconds)
        XCTAssertTrue(harness.engine.statistics().drops.filter { $0.key.hasPrefix("udp-path") }.isEmpty)
    }

    /// With two relays (spread), each carrier validates a path to its own relay, and each relay's
    /// path carries the datagrams of the mapping on its carrier; status shows each relay's path and
    /// all of them together.
    func testEachRelaysCarrierHasItsOwnPathToIt() throws {
        try start(upstream: .relays(2)) { $0.relayPolicy = .spread }
        XCTAssertTrue(harness.run(until: { [unowned self] in harness.engine.statistics().relays.allSatisfy { $0.carriers == 1 } }),
                      "a carrier to each relay")
        let sources = [app, SocketEndpoint(address: app.address, port: app.port + 1)]
        for source in sources { XCTAssertTrue(roundTrips(1, from: source)) }
        XCTAssertEqual(harness.relayServers.map { $0.statistics().clients.first?.udpMappings }, [1, 1], "spread: one mapping on each relay")
        XCTAssertTrue(harness.run(until: { [unowned self] in harness.engine.statistics().relays.allSatisfy { $0.udpPath?.state == .up } }),
                      "each relay's path validates")
        let before = harness.engine.statistics().relays.map { $0.udpPath!.datagramsSent }
        for source in sources { XCTAssertTrue(roundTrips(10, from: source)) }

        let statistics = harness.engine.statistics()
        for (i, relay) in statistics.relays.enumerated() {
            let own = try XCTUnwrap(relay.udpPath)
            XCTAssertEqual(own.datagramsSent - before[i], 10, "relay \(i): its mapping's requests went on its own path")
            XCTAssertEqual(own.paths.map(\.carrier), ["#1 to \(relay.endpoint)"])
            XCTAssertEqual(harness.relayServers[i].statistics().events["udp-path-datagrams-in", default: 0], own.datagramsSent,
                           "relay \(i) got on its path what the client sent to it")
        }
        let all = try XCTUnwrap(statistics.udpPath)
        XCTAssertEqual(all.state, .up)
        XCTAssertEqual(all.paths.count, 2)
        XCTAssertEqual(all.datagramsSent, statistics.relays.reduce(0) { $0 + $1.udpPath!.datagramsSent })
        XCTAssertEqual(all.datagramsReceived, statistics.relays.reduce(0) { $0 + $1.udpPath!.datagramsReceived })
    }

    func testOffSendsEveryDatagramOnTheCarrier() throws {
        try start { $0.udpPath = false }
        XCTAssertTrue(roundTrips(20))
        XCTAssertEqual(path.state, .off)
        XCTAssertEqual(path.datagramsSent, 0)
        XCTAssertNil(relayEvents["udp-paths-offered"], "a client without the feature is offered no path")
        XCTAssertEqual(echo.datagrams, 20)
    }

    /// A datagram larger than the path carries (on loopback: 65,507 bytes less the path's own
    /// overhead) goes on the carrier both ways, intact; a small one right after takes the path.
    func testDatagramsTooBigForThePathRideTheCarrier() throws {
        try start { $0.mtu = 65_535 }  // the answer comes back whole, not in fragments
        XCTAssertTrue(roundTrips(1))
        XCTAssertTrue(harness.run(until: { [unowned self] in path.state == .up }))
        XCTAssertTrue(roundTrips(1, size: 65_500, seed: 7), "a 65,500-byte datagram comes back intact")
        XCTAssertGreaterThanOrEqual(path.tooBigForPath, 1)
        XCTAssertGreaterThanOrEqual(relayEvents["udp-path-too-big-for-path", default: 0], 1, "the answer rode the carrier too")
        let sent = path.datagramsSent
        XCTAssertTrue(roundTrips(1))
        XCTAssertEqual(path.datagramsSent, sent + 1)
    }

    /// UDP to the relay blocked from the start: the path never validates, datagrams ride the carrier
    /// at once; unblocked, it validates on the next retry. Blocked again while up: it is given up
    /// within a few seconds, and datagrams keep flowing on the carrier.
    func testFallsBackToTheCarrierAndRecovers() throws {
        let transport = FilteringTransport()
        transport.deaf = true
        try start(transport: transport)
        XCTAssertTrue(roundTrips(5), "datagrams flow on the carrier while the path validates")
        XCTAssertTrue(harness.run(until: { [unowned self] in path.state == .fallback }, timeoutMilliseconds: 5_000))
        XCTAssertEqual(path.fallbacks, 1)
        XCTAssertNotNil(path.lastFallback)
        XCTAssertTrue(roundTrips(5), "and during the fallback")
        XCTAssertEqual(path.datagramsSent, 0)

        transport.deaf = false
        XCTAssertTrue(harness.run(until: { [unowned self] in path.state == .up }, timeoutMilliseconds: 10_000), "validated on a retry")
        XCTAssertTrue(roundTrips(5))
        XCTAssertGreaterThanOrEqual(path.datagramsSent, 5)

        transport.deaf = true
        let start = harness.loop.now
        while path.state == .up && harness.loop.now - start < 8_000 {
            harness.sendUDP(Array("lost".utf8), from: app, to: echo.endpoint)  // its answer never arrives
            harness.run(until: { false }, timeoutMilliseconds: 100)
        }
        XCTAssertNotEqual(path.state, .up, "a path that stops answering is given up")
        XCTAssertLessThan(harness.loop.now - start, 4_000, "within the silence probe and the answer timeout (1 + 2 s)")
        XCTAssertEqual(path.fallbacks, 2)
        XCTAssertTrue(roundTrips(5), "datagrams flow on the carrier again")
    }

    // MARK: bundles (feature bit 2)

    /// `count` application sockets, each with its association open and answered once (so their
    /// datagrams may take the path), and the path up.
    private func openAssociations(_ count: Int) -> [SocketEndpoint] {
        let sources = (0..<count).map { SocketEndpoint(address: app.address, port: app.port + 1 + UInt16($0)) }
        for source in sources { XCTAssertTrue(roundTrips(1, from: source)) }
        XCTAssertTrue(harness.run(until: { [unowned self] in path.state == .up }), "the path validates on loopback")
        return sources
    }

    /// One datagram of `size` bytes from each source at once, as one read of the flow; true when
    /// every answer came back intact.
    private func burst(from sources: [SocketEndpoint], size: Int = 64, seed: UInt64 = 100) -> Bool {
        let payloads = sources.indices.map { content(size, seed: seed &+ UInt64($0)) }
        let before = harness.datagrams.count
        harness.sendUDP(Array(zip(payloads, sources)), to: echo.endpoint)
        guard harness.run(until: { [unowned self] in harness.datagrams.count >= before + sources.count }, timeoutMilliseconds: 3_000) else { return false }
        return Set(harness.datagrams[before...].map(\.payload)) == Set(payloads)
    }

    /// Both ends speak bundles: sixteen datagrams read in one turn leave in one path packet, and
    /// their answers, which reach the relay together, come back in one too.
    func testABurstOfDatagramsSharesOnePathPacketEachWay() throws {
        try start()
        let sources = openAssociations(16)
        let before = path
        let relayBefore = relayEvents
        XCTAssertTrue(burst(from: sources))
        let after = path
        XCTAssertEqual(after.datagramsSent - before.datagramsSent, 16, "all on the path")
        XCTAssertEqual(after.packetsSent - before.packetsSent, 1, "in one packet")
        XCTAssertEqual(after.datagramsReceived - before.datagramsReceived, 16)
        XCTAssertEqual(after.packetsReceived - before.packetsReceived, 1, "the answers came back in one packet")
        XCTAssertEqual(relayEvents["udp-path-datagrams-in", default: 0] - relayBefore["udp-path-datagrams-in", default: 0], 16)
        XCTAssertEqual(relayEvents["udp-path-packets-out", default: 0] - relayBefore["udp-path-packets-out", default: 0], 1)
        XCTAssertTrue(roundTrips(3, from: sources[0]), "a lone datagram goes as a plain DATAGRAM and comes back")
        XCTAssertEqual(path.packetsSent - after.packetsSent, 3)
        XCTAssertTrue(harness.engine.statistics().drops.filter { $0.key.hasPrefix("udp-path") && $0.value > 0 }.isEmpty)
    }

    /// A burst larger than one packet holds is cut into as few packets as fit the path, none
    /// larger than it carries, and nothing is lost or sent on the carrier for it.
    func testABurstLargerThanAPacketIsCutIntoPacketsThatFit() throws {
        try start { $0.mtu = 65_535 }  // 6,000-byte datagrams whole, both ways
        let sources = openAssociations(16)
        let before = path
        XCTAssertTrue(burst(from: sources, size: 6_000))
        let after = path
        let maxPacket = try XCTUnwrap(after.paths.first?.maxPacket)
        let perPacket = (maxPacket - 32) / (2 + 11 + 6_000)
        XCTAssertEqual(after.datagramsSent - before.datagramsSent, 16)
        XCTAssertEqual(after.packetsSent - before.packetsSent, (16 + perPacket - 1) / perPacket, "\(perPacket) to a \(maxPacket)-byte packet")
        XCTAssertEqual(after.tooBigForPath, before.tooBigForPath)
        XCTAssertEqual(after.datagramsOverCarrier, before.datagramsOverCarrier)
    }

    /// A relay that predates bundles does not advertise bit 2: the client sends every datagram in
    /// a packet of its own, and the relay answers the same way; the path works as before.
    func testARelayWithoutBundlesGetsAPacketPerDatagram() throws {
        try start(relayFeatures: [.policyRefusals, .udpPath])
        let sources = openAssociations(16)
        let before = path
        XCTAssertTrue(burst(from: sources))
        let after = path
        XCTAssertEqual(after.datagramsSent - before.datagramsSent, 16)
        XCTAssertEqual(after.packetsSent - before.packetsSent, 16, "a packet each")
        XCTAssertEqual(after.packetsReceived - before.packetsReceived, after.datagramsReceived - before.datagramsReceived)
    }

    /// A client that predates bundles offers no bit 2: the relay answers a packet per datagram.
    func testAClientWithoutBundlesGetsAPacketPerDatagram() throws {
        try start { $0.mux.features.remove(.udpPathBundles) }
        let sources = openAssociations(16)
        let before = path
        let relayBefore = relayEvents
        XCTAssertTrue(burst(from: sources))
        let after = path
        XCTAssertEqual(after.packetsSent - before.packetsSent, 16)
        let out = relayEvents["udp-path-datagrams-out", default: 0] - relayBefore["udp-path-datagrams-out", default: 0]
        XCTAssertEqual(out, 16)
        XCTAssertEqual(relayEvents["udp-path-packets-out", default: 0] - relayBefore["udp-path-packets-out", default: 0], out)
        XCTAssertEqual(after.packetsReceived - before.packetsReceived, 16)
    }

    // MARK: opens (feature bit 3)

    /// Sixteen new application sockets at once, with the path up: their first datagrams go on the
    /// path (in one bundle) instead of behind their OPENs on the carrier, the relay opens the
    /// sixteen associations from them, and every answer comes back.
    func testNewSocketsFirstDatagramsOpenTheirAssociationsOnThePath() throws {
        try start()
        _ = openAssociations(1)
        let fresh = (0..<16).map { SocketEndpoint(address: app.address, port: app.port + 100 + UInt16($0)) }
        let before = path
        XCTAssertTrue(burst(from: fresh))
        let after = path
        XCTAssertEqual(after.datagramsSent - before.datagramsSent, 16, "every first datagram on the path")
        XCTAssertEqual(after.datagramsOverCarrier, before.datagramsOverCarrier)
        XCTAssertEqual(relayEvents["udp-path-opens", default: 0], 16, "the path datagrams opened the associations")
        XCTAssertEqual(harness.relay.statistics().clients.first?.udpMappings, 17)
        XCTAssertTrue(roundTrips(2, from: fresh[3]), "an association the path opened carries on")
        XCTAssertTrue(harness.engine.statistics().drops.filter { $0.key.hasPrefix("udp-path") && $0.value > 0 }.isEmpty)
    }

    /// The OPENs of associations their first datagrams opened on the path, and the relay's OPEN_OKs,
    /// wait for the carrier's next write, and with nothing else to write they still go: within a
    /// few milliseconds the client's carrier writes a record and reads one back.
    func testTheirOpensFollowOnTheCarrierWithNothingElseToWrite() throws {
        try start()
        _ = openAssociations(1)
        let before = try XCTUnwrap(harness.engine.statistics().carriers.first)
        let fresh = (0..<4).map { SocketEndpoint(address: app.address, port: app.port + 100 + UInt16($0)) }
        XCTAssertTrue(burst(from: fresh))
        XCTAssertTrue(harness.run(until: { [unowned self] in
            guard let now = harness.engine.statistics().carriers.first else { return false }
            return now.recordsSent > before.recordsSent && now.recordsReceived > before.recordsReceived
        }, timeoutMilliseconds: 200), "the deferred OPENs and OPEN_OKs were flushed")
        XCTAssertEqual(relayEvents["udp-path-opens", default: 0], 4)
    }

    /// At the mapping cap every new socket evicts the mapping idle longest. The evicted mapping's
    /// RESET is a frame no one waits on: the turn that reads the new socket's datagram sends it on
    /// the path and seals no carrier record, and the RESET still reaches the relay, which ends the
    /// association, with the new socket's OPEN in the next record. (Five new sockets, one after
    /// another: a keepalive or other urgent frame may share one of their turns, not most of them.)
    func testAnEvictedMappingsResetWaitsForTheCarriersNextWrite() throws {
        try start { $0.maxUDPMappings = 4 }
        _ = openAssociations(4)
        harness.run(until: { false }, timeoutMilliseconds: 20)  // the openings' held frames go
        XCTAssertEqual(harness.relay.statistics().clients.first?.udpMappings, 4)
        var turnsWithARecord = 0
        for i in 0..<5 {
            let before = try XCTUnwrap(harness.engine.statistics().carriers.first)
            let pathBefore = path.datagramsSent
            let payload = content(64, seed: 9 &+ UInt64(i))
            let answers = harness.datagrams.count
            harness.sendUDP(payload, from: SocketEndpoint(address: app.address, port: app.port + 200 + UInt16(i)), to: echo.endpoint)
            XCTAssertTrue(harness.run(until: { [unowned self] in harness.engine.statistics().events["udp-mappings-evicted"] == i + 1 }),
                          "new socket \(i) evicted a mapping")
            let turn = try XCTUnwrap(harness.engine.statistics().carriers.first)
            XCTAssertEqual(path.datagramsSent, pathBefore + 1, "its datagram went on the path")
            if turn.recordsSent > before.recordsSent { turnsWithARecord += 1 }
            XCTAssertTrue(harness.run(until: { [unowned self] in harness.datagrams.count > answers }, timeoutMilliseconds: 3_000))
            XCTAssertEqual(harness.datagrams.last?.payload, payload)
            XCTAssertTrue(harness.run(until: { [unowned self] in harness.relay.statistics().clients.first?.udpMappings == 4 },
                                      timeoutMilliseconds: 200), "the RESET reached the relay, which closed the evicted association")
        }
        XCTAssertLessThanOrEqual(turnsWithARecord, 1, "the RESETs and OPENs waited: a record in \(turnsWithARecord) of 5 evicting turns")
        XCTAssertEqual(harness.engine.statistics().flows.udpMappings, 4)
    }

    /// Where either end predates opens, a new socket's first datagram rides the carrier behind its
    /// OPEN, as before, and the path opens nothing.
    func testWithoutOpensFirstDatagramsRideTheCarrier() throws {
        for old in ["relay", "client"] {
            if old == "relay" {
                try start(relayFeatures: CarrierFeatures.implemented.subtracting(.udpPathOpens))
            } else {
                try start { $0.mux.features.remove(.udpPathOpens) }
            }
            _ = openAssociations(1)
            let fresh = (0..<4).map { SocketEndpoint(address: app.address, port: app.port + 100 + UInt16($0)) }
            let before = path
            XCTAssertTrue(burst(from: fresh), "old \(old)")
            XCTAssertEqual(path.datagramsSent, before.datagramsSent, "old \(old): none on the path")
            XCTAssertEqual(relayEvents["udp-path-opens", default: 0], 0, "old \(old)")
            echo.close()
            harness.shutdown()
        }
        harness = nil
        echo = nil
    }
}
