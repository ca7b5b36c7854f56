import SluiceCrypto
import SluiceLoop
import SluiceMux
import SluiceWire
import XCTest

@testable import SluiceRelay

/// `RelayServer.reload()` on a real relay listening on loopback: a broken configuration changes
/// nothing, a good one is applied and reported. (Closing removed clients' carriers is checked end to
/// end, in Tests/E2E/test_policy.py.)
final class RelayReloadTests: XCTestCase {
    struct Broken: Error, CustomStringConvertible {
        var description: String { "relay.json is not valid JSON: unexpected end of input" }
    }

    let clientA = PrivateKey.generate().publicKey
    let clientB = PrivateKey.generate().publicKey

    func settings(clients: Set<PublicKey>, port: UInt16 = 0) -> RelaySettings {
        RelaySettings(listen: SocketEndpoint(address: IPAddress("127.0.0.1")!, port: port), privateKey: PrivateKey.generate(),
                      allowedClients: clients, psk: nil, maxStreamsPerClient: 8, handshakeTimeoutMilliseconds: 1000)
    }

    func testBrokenConfigurationIsRefusedAndTheOldOneStays() throws {
        let loop = try EventLoop()
        let start = settings(clients: [clientA])
        let relay = try RelayServer(settings: start, loop: loop, settingsSource: { throw Broken() })
        defer { relay.shutdown() }
        guard case .refused(let why) = relay.reload() else { return XCTFail("a broken configuration was applied") }
        XCTAssertEqual(why, "relay.json is not valid JSON: unexpected end of input")
        XCTAssertEqual(relay.settings.allowedClients, [clientA])
        XCTAssertEqual(relay.responder.publicKey, start.privateKey.publicKey)
    }

    func testGoodConfigurationIsAppliedAndReported() throws {
        let loop = try EventLoop()
        var next = settings(clients: [clientB], port: 7)
        next.psk = try PresharedKey(bytes: [UInt8](repeating: 7, count: 32))
        next.destinationPolicy = DestinationPolicy(allow: [IPPrefix("127.0.0.1/32")!])
        next.maxStreamsPerClient = 2
        next.busyPollMicroseconds = 100
        let proposed = next
        let relay = try RelayServer(settings: settings(clients: [clientA]), loop: loop, settingsSource: { proposed })
        defer { relay.shutdown() }
        let listening = relay.settings.listen
        guard case .applied(let report) = relay.reload() else { return XCTFail("a good configuration was refused") }
        XCTAssertEqual(report.clientsAllowed, 1)
        XCTAssertEqual(report.clientsAdded, 1)
        XCTAssertEqual(report.clientsRemoved, 1)
        XCTAssertTrue(report.pskChanged)
        XCTAssertTrue(report.privateKeyChanged)
        XCTAssertTrue(report.policyChanged)
        XCTAssertEqual(report.needingRestart, ["--listen 127.0.0.1:7 takes a restart; still listening on \(listening)",
                                               "--busy-poll 100 takes a restart; still 0"])
        XCTAssertEqual(relay.settings.busyPollMicroseconds, 0, "the workers' loops keep the window they started with")
        XCTAssertEqual(relay.settings.allowedClients, [clientB])
        XCTAssertEqual(relay.settings.listen, listening, "the listener stays where it is")
        XCTAssertEqual(relay.settings.maxStreamsPerClient, 2)
        XCTAssertNil(relay.settings.destinationPolicy.refusal(of: IPAddress("127.0.0.1")!))
        XCTAssertEqual(relay.responder.publicKey, proposed.privateKey.publicKey, "new handshakes answer with the new key")
        XCTAssertTrue("\(RelayReload.applied(report))".hasPrefix("reloaded: 1 client key(s) allowed (1 added, 1 removed; 0 carrier(s)"))
    }

    func testWithoutASourceThereIsNothingToReload() throws {
        let loop = try EventLoop()
        let relay = try RelayServer(settings: settings(clients: [clientA]), loop: loop)
        defer { relay.shutdown() }
        guard case .refused = relay.reload() else { return XCTFail("reloaded from nowhere") }
    }

    /// How a policy refusal travels depends on the carrier's features (docs/protocol.md §1.1).
    func testRefusalReasonFollowsTheNegotiatedFeatures() throws {
        let modern = SessionPair(advertised: .implemented)
        try modern.pump()
        XCTAssertEqual(PolicyRefusal.resetReason(on: modern.relay), .forbidden)
        XCTAssertEqual(PolicyRefusal.datagramError(on: modern.relay), .forbidden)

        let oldClient = SessionPair(advertised: .implemented, clientSees: [])
        try oldClient.pump()
        XCTAssertEqual(PolicyRefusal.resetReason(on: oldClient.relay), .refused, "an old client knows no reason 6")
        XCTAssertEqual(PolicyRefusal.datagramError(on: oldClient.relay), .unreachable, "nor DATAGRAM_ERROR code 4")

        let rule = try XCTUnwrap(DestinationPolicy().refusal(of: IPAddress("127.0.0.1")!))
        XCTAssertEqual(PolicyRefusal(destination: "127.0.0.1:5432", rule: rule).message,
                       "the relay's destination policy refuses 127.0.0.1:5432 (built-in rule 127.0.0.0/8 (loopback))")
    }
}
