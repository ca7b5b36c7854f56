import Glibc
import SluiceCrypto
import SluiceLoop
import SluiceProxyProtocol
import SluiceWire
import XCTest

@testable import SluiceRelay

/// A relay with `--proxy-protocol` on loopback, reached by a plain socket that writes what a
/// balancer would: the header, then a real message 1. The client the header names is what the
/// relay's statistics show; without a header, nothing is established and nothing is answered.
final class ProxyProtocolRelayTests: XCTestCase {
    let relayKey = PrivateKey.generate()
    let clientKey = PrivateKey.generate()
    let client = SocketEndpoint("10.10.0.1:43210")!
    let balancer = SocketEndpoint("10.10.0.2:7000")!

    private func makeRelay(loop: EventLoop) throws -> RelayServer {
        var settings = RelaySettings(listen: SocketEndpoint("127.0.0.1:0")!, privateKey: relayKey, allowedClients: [clientKey.publicKey],
                                     psk: nil, maxStreamsPerClient: 8, handshakeTimeoutMilliseconds: 300)
        settings.proxyProtocol = true
        return try RelayServer(settings: settings, loop: loop)
    }

    /// A blocking TCP connection to `endpoint`, closed at the end of the test.
    private func connect(to endpoint: SocketEndpoint) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let r = endpoint.withSockaddr { Glibc.connect(fd, $0, $1) }
        guard fd >= 0, r == 0 else { throw XCTSkip("no loopback TCP here: errno \(errno)") }
        addTeardownBlock { close(fd) }
        return fd
    }

    private func send(_ fd: Int32, _ bytes: [UInt8]) {
        XCTAssertEqual(bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }, bytes.count)
    }

    /// Whatever the relay wrote to `fd` so far, without waiting.
    private func pending(_ fd: Int32) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return n > 0 ? Array(buffer[0..<n]) : []
    }

    /// Runs `loop` until `condition` holds at the end of a turn, or `milliseconds` passed.
    @discardableResult
    private func run(_ loop: EventLoop, milliseconds: UInt64 = 2_000, until condition: @escaping () -> Bool) -> Bool {
        var met = condition()
        guard !met else { return true }
        let hook = loop.addEndOfTurnHook { if condition() { met = true; loop.stop() } }
        let timer = loop.schedule(afterMilliseconds: milliseconds) { loop.stop() }
        loop.run()
        loop.removeEndOfTurnHook(hook)
        timer.cancel()
        return met
    }

    private func message1() throws -> SluiceInitiator {
        try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, psk: nil)
    }

    func testTheHeadersClientIsThePeerForBothVersions() throws {
        for version in [ProxyHeader.Version.v1, .v2] {
            // Header and message 1 in one write, as a balancer forwards them; and the header in
            // three pieces with message 1 later.
            try establish(version: version, pieces: 1)
            try establish(version: version, pieces: 3)
        }
    }

    /// Connects through a `version` header written in `pieces` writes, then message 1; checks the
    /// carrier is up, message 2 came back and the relay names the header's client.
    private func establish(version: ProxyHeader.Version, pieces: Int) throws {
        let loop = try EventLoop()
        let relay = try makeRelay(loop: loop)
        defer { relay.shutdown() }
        let fd = try connect(to: relay.listeningEndpoint)
        let header = ProxyHeader(version: version, addresses: .init(source: client, destination: balancer)).encoded()
        let initiator = try message1()
        if pieces == 1 {
            send(fd, header + initiator.message1)
        } else {
            let cuts = [0, 3, 14, header.count]
            for i in 0..<3 {
                send(fd, Array(header[cuts[i]..<cuts[i + 1]]))
                run(loop, milliseconds: 20) { false }
            }
            XCTAssertEqual(relay.pendingHandshakes, 1, "a header in pieces was refused")
            send(fd, initiator.message1)
        }
        XCTAssertTrue(run(loop) { relay.carrierCount == 1 }, "no carrier after a \(version) header in \(pieces) piece(s)")
        XCTAssertNoThrow(try initiator.finish(message2: pending(fd)), "message 2 answers the message 1 after the header")
        XCTAssertEqual(relay.statistics().clients.first?.addresses, ["\(client)"])
    }

    func testLocalKeepsTheConnectionsOwnAddress() throws {
        let loop = try EventLoop()
        let relay = try makeRelay(loop: loop)
        defer { relay.shutdown() }
        let fd = try connect(to: relay.listeningEndpoint)
        send(fd, ProxyHeader(version: .v2, command: .local, addresses: nil).encoded() + (try message1()).message1)
        XCTAssertTrue(run(loop) { relay.carrierCount == 1 })
        XCTAssertEqual(relay.statistics().clients.first?.addresses.first?.hasPrefix("127.0.0.1:"), true)
    }

    func testWithoutAHeaderNothingIsAnswered() throws {
        let loop = try EventLoop()
        let relay = try makeRelay(loop: loop)
        defer { relay.shutdown() }
        let fd = try connect(to: relay.listeningEndpoint)
        send(fd, try message1().message1)  // a client straight to the relay, past the balancer
        XCTAssertTrue(run(loop) { relay.statistics().drops["proxy-header-invalid"] == 1 }, "not refused")
        XCTAssertEqual(relay.carrierCount, 0)
        XCTAssertEqual(pending(fd), [], "a reply to a connection without a header")
        XCTAssertEqual(relay.statistics().drops["handshake-failed"], nil, "counted as a bad header, not a bad handshake")

        // A header that stops half-way fails at the handshake timeout, also without a word.
        let cut = try connect(to: relay.listeningEndpoint)
        send(cut, Array(ProxyHeader(version: .v2, addresses: .init(source: client, destination: balancer)).encoded().prefix(20)))
        XCTAssertTrue(run(loop) { relay.pendingHandshakes == 0 && relay.statistics().drops["handshake-failed"] == 1 })
        XCTAssertEqual(pending(cut), [])

        // A port check (connect, close) is an event, not a failure.
        close(try connect(to: relay.listeningEndpoint))
        XCTAssertTrue(run(loop) { relay.statistics().events["connections-without-data"] == 1 })
    }
}
