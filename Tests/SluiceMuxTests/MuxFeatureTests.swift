import SluiceWire
import XCTest

@testable import SluiceMux

/// Capability negotiation (docs/protocol.md §1.1): message 2's feature bits, the client's HELLO, and
/// both directions of compatibility — an old client with a new relay, a new client with an old one.
final class MuxFeatureTests: XCTestCase {
    let destination = Destination(host: .ip(IPAddress("192.0.2.1")!), port: 443)

    func testNewClientSendsHelloFirstAndBothEndsAgree() throws {
        let pair = MuxPair(advertised: .implemented)
        XCTAssertEqual(pair.client.features, .implemented, "the client may rely on what the relay advertised at once")
        XCTAssertEqual(pair.relay.features, [], "the relay waits for HELLO")
        pair.client.flush()
        let first = try decodeFrames(XCTUnwrap(pair.clientCarrier.records.first))
        XCTAssertEqual(first.first, .control(.hello(.implemented)), "HELLO is the carrier's first frame")
        try pair.pump()
        XCTAssertEqual(pair.relay.features, .implemented)
        XCTAssertEqual(pair.relayCarrier.negotiated, [.implemented], "the relay hears what is in effect")
        _ = try pair.openStream(to: destination)  // streams work as before
    }

    func testHelloAndOpenInOneRecord() throws {
        let pair = MuxPair(advertised: .implemented)
        let stream = pair.client.open(to: destination, handler: RecordingHandler())
        pair.client.flush()
        let frames = try decodeFrames(XCTUnwrap(pair.clientCarrier.records.first))
        XCTAssertEqual(frames.count, 2)
        XCTAssertEqual(frames.first, .control(.hello(.implemented)))
        try pair.pump()
        XCTAssertTrue(stream.isOpen)
        XCTAssertEqual(pair.relay.features, .implemented)
    }

    /// An old relay sends zeros in message 2: the client sends no HELLO (the old relay would close
    /// the carrier on a frame type it does not know) and uses no feature.
    func testNewClientWithOldRelaySendsNoHello() throws {
        let pair = MuxPair(advertised: [])
        XCTAssertEqual(pair.client.features, [])
        pair.client.flush()
        XCTAssertTrue(pair.clientCarrier.records.isEmpty, "nothing is sent before the first stream")
        _ = pair.client.open(to: destination, handler: RecordingHandler())
        pair.client.flush()
        let frames = try decodeFrames(XCTUnwrap(pair.clientCarrier.records.first))
        XCTAssertEqual(frames.count, 1)
        guard case .control(.open)? = frames.first else { return XCTFail("the first frame is \(frames), not OPEN") }
        try pair.pump()
        XCTAssertEqual(pair.relay.features, [])
    }

    /// An old client ignores message 2's bits and never sends HELLO: the relay never uses a feature.
    func testOldClientWithNewRelayGetsNoFeature() throws {
        let pair = MuxPair(advertised: .implemented, clientSees: [])
        _ = try pair.openStream(to: destination)
        XCTAssertEqual(pair.relay.features, [], "no HELLO came: the base protocol only")
    }

    func testFeaturesInEffectAreTheIntersection() throws {
        var quiet = MuxSettings()
        quiet.features = []
        let pair = MuxPair(client: quiet, advertised: .implemented)
        XCTAssertEqual(pair.client.features, [])
        try pair.pump()
        XCTAssertEqual(pair.relay.features, [], "HELLO(0): nothing in common")

        var future = MuxSettings()
        future.features = CarrierFeatures(rawValue: 0xFFFF_FFFF)
        let ahead = MuxPair(client: future, advertised: .implemented)
        try ahead.pump()
        XCTAssertEqual(ahead.relay.features, .implemented, "bits the relay does not know are ignored")
        XCTAssertEqual(ahead.client.features, .implemented)

        // A client of the policy-refusals days: no UDP path on that carrier.
        var older = MuxSettings()
        older.features = [.policyRefusals]
        let mixed = MuxPair(client: older, advertised: .implemented)
        try mixed.pump()
        XCTAssertEqual(mixed.relay.features, [.policyRefusals])
    }

    func testHelloOutOfTurnIsAProtocolError() throws {
        let hello = try encodeRecord([.control(.hello(.implemented))])

        // To a relay that advertised nothing.
        let old = MuxPair(advertised: [])
        XCTAssertEqual(receiveError(old.relay, hello).map { "\($0)" }, "\(MuxError.unexpectedHello(.notAdvertised))")

        // A second one.
        let twice = MuxPair(advertised: .implemented)
        try twice.pump()
        XCTAssertEqual(receiveError(twice.relay, hello).map { "\($0)" }, "\(MuxError.unexpectedHello(.repeated))")

        // After another frame.
        let late = MuxPair(advertised: .implemented, clientSees: [])
        _ = try late.openStream(to: destination)
        XCTAssertEqual(receiveError(late.relay, hello).map { "\($0)" }, "\(MuxError.unexpectedHello(.notFirst))")

        // To the client.
        let reversed = MuxPair(advertised: .implemented)
        XCTAssertEqual(receiveError(reversed.client, hello).map { "\($0)" }, "\(MuxError.unexpectedHello(.toClient))")
    }

    func testNegotiationStateMachine() throws {
        var relay = FeatureNegotiation(role: .relay, advertised: [.policyRefusals], supported: .implemented)
        XCTAssertNil(relay.helloToSend)
        XCTAssertEqual(relay.inEffect, [])
        XCTAssertThrowsError(try relay.receiveHello([.policyRefusals], isFirstFrame: false))
        try relay.receiveHello(CarrierFeatures(rawValue: 0b11), isFirstFrame: true)
        XCTAssertEqual(relay.inEffect, [.policyRefusals])

        let client = FeatureNegotiation(role: .client, advertised: CarrierFeatures(rawValue: 0x80), supported: .implemented)
        XCTAssertEqual(client.helloToSend, .implemented, "any advertised bit asks for HELLO, known or not")
        XCTAssertEqual(client.inEffect, [])
        XCTAssertNil(FeatureNegotiation(role: .client, advertised: [], supported: .implemented).helloToSend)
    }

    func testForbiddenTravelsBothWays() throws {
        let pair = MuxPair(autoAccept: false, advertised: .implemented)
        pair.relayCarrier.onRequest = { stream, _ in stream.reset(.forbidden, message: "policy") }
        let handler = RecordingHandler()
        _ = pair.client.open(to: destination, handler: handler)
        try pair.pump()
        XCTAssertEqual(handler.events, [.reset(.forbidden, "policy")])
    }

    func testDescriptions() {
        XCTAssertEqual(CarrierFeatures.policyRefusals.description, "policy-refusals")
        XCTAssertEqual(CarrierFeatures().description, "none")
        XCTAssertEqual(CarrierFeatures(rawValue: 0x81).description, "policy-refusals+0x80")
        XCTAssertEqual(CarrierFeatures(rawValue: 0x03).description, "policy-refusals+udp-path")
        XCTAssertEqual(CarrierFeatures(rawValue: 0x06).description, "udp-path+udp-path-bundles")
        XCTAssertEqual(CarrierFeatures(rawValue: 0x0A).description, "udp-path+udp-path-opens")
        XCTAssertEqual("\(MuxError.unexpectedHello(.notFirst))", "peer sent HELLO out of turn: HELLO must be the carrier's first frame")
    }
}
