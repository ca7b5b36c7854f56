import SluiceWire
import XCTest

@testable import SluiceMux

/// A session's side of the UDP path (docs/protocol.md §8): UDP_PATH and UDP_PATH_USE in turn and
/// out of turn, and which datagrams a `MuxDatagramPath` is offered.
final class MuxUDPPathTests: XCTestCase {
    private let endpoint = SocketEndpoint("192.0.2.7:53")!
    private let destination = Destination(host: .ip(IPAddress("192.0.2.7")!), port: 53)

    func testOfferAndUseTravelBetweenTheEnds() throws {
        let pair = MuxPair(advertised: .implemented)
        try pair.pump()
        pair.relay.offerUDPPath(index: 42)
        try pair.pump()
        XCTAssertEqual(pair.clientCarrier.pathOffers, [42])
        XCTAssertTrue(pair.client.udpPathOffered)
        pair.client.useUDPPath(true)
        pair.client.useUDPPath(false)
        try pair.pump()
        XCTAssertEqual(pair.relayCarrier.pathUses, [true, false])
    }

    func testPathFramesOutOfTurnAreProtocolErrors() throws {
        let offer = try encodeRecord([.control(.udpPath(index: 9))])
        let use = try encodeRecord([.control(.udpPathUse(true))])

        let pair = MuxPair(advertised: .implemented)
        try pair.pump()
        XCTAssertEqual(receiveError(pair.relay, offer).map { "\($0)" }, "\(MuxError.unexpectedPathFrame(.udpPath, .wrongEnd))")
        XCTAssertEqual(receiveError(pair.relay, use).map { "\($0)" }, "\(MuxError.unexpectedPathFrame(.udpPathUse, .notOffered))")
        XCTAssertEqual(receiveError(pair.client, use).map { "\($0)" }, "\(MuxError.unexpectedPathFrame(.udpPathUse, .wrongEnd))")
        XCTAssertNil(receiveError(pair.client, offer))
        XCTAssertEqual(receiveError(pair.client, offer).map { "\($0)" }, "\(MuxError.unexpectedPathFrame(.udpPath, .repeated))")

        // Where the feature is not in effect: an old relay's client, an old client's relay.
        let old = MuxPair(advertised: [.policyRefusals])
        try old.pump()
        XCTAssertEqual(receiveError(old.client, offer).map { "\($0)" }, "\(MuxError.unexpectedPathFrame(.udpPath, .notNegotiated))")
        var older = MuxSettings()
        older.features = [.policyRefusals]
        let oldClient = MuxPair(client: older, advertised: .implemented)
        try oldClient.pump()
        XCTAssertEqual(receiveError(oldClient.relay, use).map { "\($0)" }, "\(MuxError.unexpectedPathFrame(.udpPathUse, .notNegotiated))")
    }

    /// Without UDP path opens (bit 3), datagrams sent before OPEN_OK ride the carrier behind their
    /// OPEN, so they never reach the relay ahead of the association; after it the path gets them,
    /// and what it refuses rides the carrier. Both ends deliver what arrives on the path to the live
    /// association.
    func testDatagramsGoToThePathOnceTheAssociationIsOpen() throws {
        let pair = MuxPair(autoAccept: false, advertised: CarrierFeatures.implemented.subtracting(.udpPathOpens))
        let relayHandler = DatagramHandler()
        pair.relayCarrier.onRequest = { stream, _ in
            stream.handler = relayHandler
            stream.accept()
        }
        let clientPath = MemoryPath()
        pair.client.datagramPath = clientPath
        let handler = DatagramHandler()
        let association = pair.client.openAssociation(to: destination, handler: handler)
        XCTAssertEqual(pair.client.associationCount, 1)
        XCTAssertTrue(Array("first".utf8).withUnsafeBytes { association.sendDatagram($0, endpoint: endpoint) })
        XCTAssertTrue(clientPath.sent.isEmpty, "before OPEN_OK the datagram rides the carrier")
        try pair.pump()
        XCTAssertTrue(association.isOpen)
        XCTAssertEqual(relayHandler.datagrams.map(\.payload), [Array("first".utf8)])
        XCTAssertEqual(pair.relay.associationCount, 1)

        XCTAssertTrue(Array("second".utf8).withUnsafeBytes { association.sendDatagram($0, endpoint: endpoint) })
        XCTAssertEqual(clientPath.sent.map(\.bytes), [Array("second".utf8)])
        XCTAssertEqual(clientPath.sent.first?.stream, association.id)
        clientPath.accepting = false
        XCTAssertTrue(Array("third".utf8).withUnsafeBytes { association.sendDatagram($0, endpoint: endpoint) })
        try pair.pump()
        XCTAssertEqual(relayHandler.datagrams.map(\.payload), [Array("first".utf8), Array("third".utf8)], "refused by the path: on the carrier")

        // A datagram the path took but the kernel then refused: on the carrier, past an accepting path.
        clientPath.accepting = true
        XCTAssertTrue(Array("refused".utf8).withUnsafeBytes { pair.client.sendDatagramOnCarrier(stream: association.id, endpoint: endpoint, payload: $0) })
        try pair.pump()
        XCTAssertEqual(relayHandler.datagrams.last?.payload, Array("refused".utf8))
        XCTAssertEqual(clientPath.sent.count, 1, "not offered to the path again")
        XCTAssertFalse([UInt8]().withUnsafeBytes { pair.client.sendDatagramOnCarrier(stream: 99, endpoint: endpoint, payload: $0) },
                       "no such association: nothing to carry")

        // What the path delivers, at each end.
        XCTAssertTrue(Array("up".utf8).withUnsafeBytes { pair.relay.receivePathDatagram(stream: association.id, endpoint: endpoint, payload: $0) })
        XCTAssertEqual(relayHandler.datagrams.last?.payload, Array("up".utf8))
        XCTAssertTrue(Array("down".utf8).withUnsafeBytes { pair.client.receivePathDatagram(stream: association.id, endpoint: endpoint, payload: $0) })
        XCTAssertEqual(handler.datagrams.last?.payload, Array("down".utf8))
        XCTAssertFalse([UInt8]().withUnsafeBytes { pair.client.receivePathDatagram(stream: 99, endpoint: endpoint, payload: $0) },
                       "an id that is not a live association is dropped, not a protocol error")

        association.reset(.closed)
        XCTAssertEqual(pair.client.associationCount, 0)
        XCTAssertFalse([UInt8]().withUnsafeBytes { pair.client.receivePathDatagram(stream: association.id, endpoint: endpoint, payload: $0) })
        pair.relayCarrier.onRequest = { stream, _ in
            stream.handler = RecordingHandler()
            stream.accept()
        }
        let tcp = try pair.openStream(to: destination)
        XCTAssertFalse([UInt8]().withUnsafeBytes { pair.client.receivePathDatagram(stream: tcp.client.id, endpoint: endpoint, payload: $0) },
                       "a TCP stream takes no datagrams")
        pair.client.close(.closed, message: "done")
        XCTAssertNil(pair.client.datagramPath, "a closed session lets its path go")
    }
}
