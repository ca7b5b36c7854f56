import SluiceTunnel
import SluiceWire
import XCTest

/// UDP mappings, DNS redirect, ICMP and drops, in one process (see `EngineHarness`).
final class EngineUDPTests: XCTestCase {
    private var harness: EngineHarness!
    private var echo: LoopUDPEchoServer!

    override func tearDown() {
        echo?.close()
        harness?.shutdown()
        harness = nil
        super.tearDown()
    }

    private func start(configure: (inout TunnelConfiguration) -> Void = { _ in }) throws {
        harness = try EngineHarness(configure: configure)
        echo = try LoopUDPEchoServer(on: harness.host, loop: harness.loop)
        harness.waitConnected()
    }

    func testDatagramsRoundTripThroughOneMapping() throws {
        try start()
        let app = SocketEndpoint(address: IPAddress("198.18.0.1")!, port: 5353)
        for i in 0..<20 { harness.sendUDP(Array("ping \(i)".utf8), from: app, to: echo.endpoint) }
        XCTAssertTrue(harness.run { [unowned self] in harness.datagrams.count == 20 })
        XCTAssertEqual(Set(harness.datagrams.map { String(decoding: $0.payload, as: UTF8.self) }), Set((0..<20).map { "ping \($0)" }))
        XCTAssertTrue(harness.datagrams.allSatisfy { $0.from == echo.endpoint && $0.to == app }, "replies come from the server to the application")
        let stats = harness.engine.statistics()
        XCTAssertEqual(stats.flows.udpMappings, 1, "one source endpoint, one mapping")
        XCTAssertEqual(stats.traffic.udpDatagramsUp, 20)
        XCTAssertEqual(stats.traffic.udpDatagramsDown, 20)
        XCTAssertEqual(stats.traffic.udpBytesUp, (0..<20).reduce(0) { $0 + "ping \($1)".utf8.count })
        XCTAssertEqual(echo.datagrams, 20)
    }

    func testDNSRedirectSendsQueriesToTheResolverAndAnswersFromTheAddressAsked() throws {
        // The "resolver" is the echo server; the application asks an address with no host at all.
        var resolver: SocketEndpoint?
        harness = try EngineHarness()
        echo = try LoopUDPEchoServer(on: harness.host, loop: harness.loop)
        resolver = echo.endpoint
        harness.shutdown()
        let port = resolver!.port
        echo.close()
        harness = try EngineHarness { $0.dnsResolvers = [resolver!] }
        echo = try LoopUDPEchoServer(on: harness.host, loop: harness.loop, port: port)
        harness.waitConnected()

        let app = SocketEndpoint(address: IPAddress("198.18.0.1")!, port: 40_053)
        let asked = SocketEndpoint(address: IPAddress("192.0.2.53")!, port: 53)
        harness.sendUDP(Array("query".utf8), from: app, to: asked)
        XCTAssertTrue(harness.run { [unowned self] in !harness.datagrams.isEmpty })
        XCTAssertEqual(echo.datagrams, 1, "the query reached the configured resolver")
        XCTAssertEqual(harness.datagrams[0].from, asked, "the answer comes from the address the application asked")
        XCTAssertEqual(harness.datagrams[0].payload, Array("query".utf8))
    }

    func testDropsAreCountedByReason() throws {
        try start()
        // ICMP that is not an echo request (a timestamp request, type 13) is dropped and counted.
        var icmp = [UInt8](repeating: 0, count: 20 + 20)
        icmp.withUnsafeMutableBytes { buffer in
            IPv4Header(source: IPAddress("198.18.0.1")!, destination: IPAddress("192.0.2.9")!, protocol: .icmp, payloadLength: 20).emit(into: buffer)
            buffer[20] = 13
        }
        var garbage = [UInt8](repeating: 0x45, count: 30)
        garbage[2] = 0xFF  // a total length far beyond the packet
        harness.inject([icmp, garbage])
        XCTAssertTrue(harness.run { [unowned self] in harness.engine.statistics().drops.count == 2 })
        let drops = harness.engine.statistics().drops
        XCTAssertEqual(drops["icmp-not-echo"], 1)
        XCTAssertEqual(drops["malformed-packet"], 1)
    }

    func testEchoRequestsAreAnsweredByTheEngine() throws {
        try start()
        var request = [UInt8](repeating: 0, count: 20 + 8 + 4)
        request.withUnsafeMutableBytes { buffer in
            IPv4Header(source: IPAddress("198.18.0.1")!, destination: IPAddress("192.0.2.9")!, protocol: .icmp, payloadLength: 12).emit(into: buffer)
            buffer[20] = 8  // echo request
            buffer[24] = 0x12; buffer[25] = 0x34; buffer[26] = 0; buffer[27] = 1
            let sum = Checksum.complement(Checksum.sum(UnsafeRawBufferPointer(rebasing: buffer[20...])))
            buffer.storeBytes(of: sum.bigEndian, toByteOffset: 22, as: UInt16.self)
        }
        harness.inject([request])
        XCTAssertTrue(harness.run { [unowned self] in !harness.icmp.isEmpty })
        XCTAssertEqual(harness.icmp[0][20], 0, "an echo reply")
        XCTAssertEqual(harness.engine.statistics().events["echo-replies"], 1)
    }

    /// Split DNS: a query for a name in the domains goes to the tunnel's resolver through the relay,
    /// answered as if from the address asked; a query for another name goes around the tunnel by the
    /// host's direct path, and its answer comes back to the application; a query to a resolver the
    /// host routes into the tunnel goes through the relay unchanged.
    func testSplitDNSSendsOtherNamesAroundTheTunnel() throws {
        harness = try EngineHarness()
        echo = try LoopUDPEchoServer(on: harness.host, loop: harness.loop)
        let resolver = echo.endpoint
        harness.shutdown()
        echo.close()
        let direct = MemoryDirectDNSPath()
        harness = try EngineHarness(directDNS: direct) {
            $0.dnsResolvers = [resolver]
            $0.dnsDomains = [DNSName("corp.test")!]
        }
        echo = try LoopUDPEchoServer(on: harness.host, loop: harness.loop, port: resolver.port)
        harness.waitConnected()

        let app = SocketEndpoint(address: IPAddress("198.18.0.1")!, port: 40_054)
        let lan = SocketEndpoint(address: IPAddress("192.168.1.1")!, port: 53)
        let corp = DNSQuestion(name: DNSName("host.corp.test")!, type: 1).queryMessage(id: 7)
        harness.sendUDP(corp, from: app, to: lan)
        XCTAssertTrue(harness.run { [unowned self] in !harness.datagrams.isEmpty })
        XCTAssertEqual(echo.datagrams, 1, "the corp.test query reached the tunnel's resolver")
        XCTAssertEqual(harness.datagrams[0].from, lan, "answered as if from the address asked")
        XCTAssertTrue(direct.sent.isEmpty)

        let other = DNSQuestion(name: DNSName("www.example.org")!, type: 1).queryMessage(id: 8)
        harness.sendUDP(other, from: app, to: lan)
        XCTAssertTrue(harness.run { direct.sent.count == 1 })
        XCTAssertEqual(direct.sent[0].to, lan)
        XCTAssertEqual(direct.sent[0].from, app)
        XCTAssertEqual(direct.sent[0].payload, other)
        XCTAssertEqual(echo.datagrams, 1, "the other name never reached the tunnel's resolver")
        direct.answer(Array("answer".utf8), from: lan, to: app)
        XCTAssertTrue(harness.run { [unowned self] in harness.datagrams.count == 2 })
        XCTAssertEqual(harness.datagrams[1].from, lan)
        XCTAssertEqual(harness.datagrams[1].to, app)
        XCTAssertEqual(harness.datagrams[1].payload, Array("answer".utf8))

        // A resolver the host routes into the tunnel: the other name goes through the relay to it.
        direct.tunnelled = [resolver.address]
        let app2 = SocketEndpoint(address: IPAddress("198.18.0.1")!, port: 40_055)
        harness.sendUDP(other, from: app2, to: resolver)
        XCTAssertTrue(harness.run { [unowned self] in echo.datagrams == 2 })
        XCTAssertEqual(direct.sent.count, 1)
        XCTAssertEqual(harness.engine.statistics().events["dns-queries-around-tunnel"], 1)
        harness.engine.stop()
        XCTAssertTrue(direct.stopped, "the engine stops its direct path")
    }
}
