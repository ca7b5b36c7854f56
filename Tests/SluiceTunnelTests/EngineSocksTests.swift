import SluiceProxy
import SluiceSocks
import SluiceTunnel
import SluiceWire
import SluiceTestSupport
import XCTest

/// The engine with a SOCKS5 upstream (`SocksUpstream`), in one process: the SOCKS5 server is Sluice's
/// own front-end, whose connections reach the test servers through the relay (see `EngineHarness`).
final class EngineSocksTests: XCTestCase {
    private var harness: EngineHarness!
    private var echo: LoopTCPEchoServer!

    override func tearDown() {
        echo?.close()
        harness?.shutdown()
        harness = nil
        super.tearDown()
    }

    private func start(_ upstream: EngineHarness.Upstream = .socks()) throws {
        harness = try EngineHarness(upstream: upstream)
        echo = try LoopTCPEchoServer(on: harness.host, loop: harness.loop)
        harness.waitConnected()
    }

    func testTCPTransferBothWaysThroughASocksServer() throws {
        try start()
        let upload = content(3 << 20, seed: 11)
        let app = harness.connectTCP(to: echo.endpoint)
        XCTAssertTrue(harness.run { app.state == .established }, "the SOCKS5 CONNECT admitted the SYN")
        app.write(upload)
        app.shutdownWrite()
        XCTAssertTrue(harness.run(until: { app.isDone }, timeoutMilliseconds: 30_000), "transfer did not finish: received \(app.received.count)")
        XCTAssertEqual(sha256(app.received), sha256(upload), "the echo came back intact")
        XCTAssertTrue(app.receivedFIN, "half-close carried both ways")

        let stats = harness.engine.statistics()
        XCTAssertEqual(stats.relay, "socks5://\(harness.socksServer!.listeningEndpoint)")
        XCTAssertEqual(stats.relayPublicKey, "")
        XCTAssertEqual(stats.traffic.tcpBytesUp, upload.count)
        XCTAssertEqual(stats.traffic.tcpBytesDown, upload.count)
        XCTAssertEqual(stats.carriers.count, 1, "one entry: the SOCKS5 server")
        XCTAssertEqual(stats.carriers[0].state, .up)
        XCTAssertGreaterThan(stats.carriers[0].bytesSent, upload.count, "bytes on the sockets to the server, handshakes included")
        XCTAssertTrue(stats.drops.isEmpty, "\(stats.drops)")
    }

    func testManyFlowsAtOnceKeepTheirBytesApart() throws {
        try start()
        let apps = (0..<8).map { i -> (AppTCP, [UInt8]) in
            let bytes = content(200_000 + i * 1_000, seed: UInt64(100 + i))
            let app = harness.connectTCP(to: echo.endpoint)
            app.write(bytes)
            app.shutdownWrite()
            return (app, bytes)
        }
        XCTAssertTrue(harness.run(until: { apps.allSatisfy { $0.0.isDone } }, timeoutMilliseconds: 30_000))
        for (app, bytes) in apps { XCTAssertEqual(sha256(app.received), sha256(bytes)) }
    }

    func testRefusedDestinationIsARST() throws {
        try start()
        let closed = echo.endpoint
        echo.close()
        echo = nil
        let app = harness.connectTCP(to: closed)
        XCTAssertTrue(harness.run { app.state == .closed })
        XCTAssertTrue(app.refused, "the SOCKS5 reply 'connection refused' became a RST: ECONNREFUSED")
        XCTAssertEqual(harness.engine.statistics().drops["tcp-refused-by-relay-refused"], 1)
    }

    func testUDPThroughUDPAssociate() throws {
        harness = try EngineHarness(upstream: .socks())
        let udpEcho = try LoopUDPEchoServer(on: harness.host, loop: harness.loop)
        defer { udpEcho.close() }
        harness.waitConnected()
        let app = SocketEndpoint(address: IPAddress("198.18.0.1")!, port: 5353)
        // At once after the first: the association is still being set up, and the datagrams wait for it.
        for i in 0..<5 { harness.sendUDP(Array("ping \(i)".utf8), from: app, to: udpEcho.endpoint) }
        XCTAssertTrue(harness.run { [unowned self] in harness.datagrams.count == 5 })
        XCTAssertEqual(Set(harness.datagrams.map { String(decoding: $0.payload, as: UTF8.self) }), Set((0..<5).map { "ping \($0)" }))
        XCTAssertTrue(harness.datagrams.allSatisfy { $0.from == udpEcho.endpoint && $0.to == app })
        XCTAssertEqual(harness.engine.statistics().flows.udpMappings, 1)
    }

    func testCredentialsAreCheckedFirstAndADeadServerRefusesAtOnceThenRecovers() throws {
        let users = ProxyUsers([(Array("alice".utf8), Array("secret".utf8))])
        harness = try EngineHarness(upstream: .socks(users: users, credentials: SocksCredentials(username: Array("alice".utf8), password: Array("wrong".utf8))))
        XCTAssertTrue(harness.run { [unowned self] in harness.events.contains { if case .error(let e) = $0 { return e.kind == .dial } else { return false } } })
        guard case .error(let error)? = harness.events.first(where: { if case .error = $0 { return true } else { return false } }) else { return XCTFail() }
        XCTAssertTrue(error.message.contains("rejected the username or password"), error.message)
        XCTAssertEqual(harness.engine.state, .connecting, "never connected with a wrong password")
        harness.shutdown()
        harness = nil

        try start(.socks(users: users, credentials: SocksCredentials(username: Array("alice".utf8), password: Array("secret".utf8))))
        let first = harness.connectTCP(to: echo.endpoint)
        XCTAssertTrue(harness.run { first.state == .established })
        try harness.killSocksServer(restart: false)
        XCTAssertTrue(harness.run { first.wasReset }, "a flow through the stopped server is reset")
        let refused = harness.connectTCP(to: echo.endpoint)
        XCTAssertTrue(harness.run { refused.state == .closed })
        XCTAssertTrue(harness.run { [unowned self] in harness.engine.state == .reconnecting }, "the failed connect counted the server down")
        let later = harness.connectTCP(to: echo.endpoint)
        XCTAssertTrue(harness.run { later.state == .closed }, "refused at once while down")
        XCTAssertGreaterThanOrEqual(harness.engine.statistics().drops["tcp-refused-no-carrier"] ?? 0, 1)
        try harness.killSocksServer(restart: true)
        XCTAssertTrue(harness.run { [unowned self] in harness.engine.state == .connected }, "checked again and back")
        let again = harness.connectTCP(to: echo.endpoint)
        again.write(Array("back".utf8))
        again.shutdownWrite()
        XCTAssertTrue(harness.run { again.isDone })
        XCTAssertEqual(again.received, Array("back".utf8))
        XCTAssertEqual(harness.engine.statistics().carriers[0].reconnects, 1)
    }
}
