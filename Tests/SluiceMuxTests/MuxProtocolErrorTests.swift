import SluiceMux
import SluiceWire
import XCTest

/// What a broken peer can send that must close the carrier (docs/protocol.md §3): each one throws
/// a `MuxError` out of `receive(record:)`. Records are built with the real encoder, bypassing the
/// checks a well-behaved session makes before sending.
final class MuxProtocolErrorTests: XCTestCase {
    func testDataForANeverOpenedStreamIsAnError() throws {
        let pair = MuxPair()
        _ = try pair.openStream()  // stream 1 exists; 3, 5 and even ids were never opened

        for id: UInt32 in [3, 5, 2] {
            let error = receiveError(pair.relay, try encodeRecord([.data(stream: id, bytes: [1])]))
            guard case .unknownStream(id, _) = error else { return XCTFail("relay, stream \(id): \(String(describing: error))") }
        }
        let fresh = MuxPair()
        _ = try fresh.openStream()
        for id: UInt32 in [3, 7, 2] {
            let error = receiveError(fresh.client, try encodeRecord([.data(stream: id, bytes: [1])]))
            guard case .unknownStream(id, _) = error else { return XCTFail("client, stream \(id): \(String(describing: error))") }
        }
    }

    func testOtherStreamFramesForANeverOpenedStreamAreErrors() throws {
        let frames: [TestFrame] = [
            .control(.credit(stream: 9, increment: 1)), .control(.fin(stream: 9)),
            .control(.reset(stream: 9, reason: .closed, message: "")), .control(.openOK(stream: 9, window: 1)),
        ]
        for frame in frames {
            let pair = MuxPair()
            guard case .unknownStream(9, _) = receiveError(pair.client, try encodeRecord([frame])) else {
                return XCTFail("client accepted \(frame)")
            }
        }
    }

    func testDataBeyondTheWindowIsAnError() throws {
        var relaySettings = MuxSettings()
        relaySettings.streamWindow = 4096
        let pair = MuxPair(relay: relaySettings)
        let s = try pair.openStream()
        let id = s.client.id

        // Exactly the window is fine, in two frames of one record.
        let full = try encodeRecord([.data(stream: id, bytes: pattern(4000, seed: 1)), .data(stream: id, bytes: pattern(96, seed: 2))])
        XCTAssertNil(receiveError(pair.relay, full))
        XCTAssertEqual(s.relayHandler.received.count, 4096)
        // One byte more is not.
        guard case .windowExceeded(stream: id) = receiveError(pair.relay, try encodeRecord([.data(stream: id, bytes: [0])])) else {
            return XCTFail("DATA beyond the window was accepted")
        }
    }

    func testConsumedBytesMakeRoomInTheWindow() throws {
        var relaySettings = MuxSettings()
        relaySettings.streamWindow = 4096
        let pair = MuxPair(relay: relaySettings)
        let s = try pair.openStream()
        let id = s.client.id
        XCTAssertNil(receiveError(pair.relay, try encodeRecord([.data(stream: id, bytes: pattern(4096, seed: 3))])))
        s.relay.consumed(1024)
        XCTAssertNil(receiveError(pair.relay, try encodeRecord([.data(stream: id, bytes: pattern(1024, seed: 4))])))
        guard case .windowExceeded = receiveError(pair.relay, try encodeRecord([.data(stream: id, bytes: [0])])) else {
            return XCTFail("DATA beyond the reopened window was accepted")
        }
    }

    func testDataAfterFINIsAnError() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        XCTAssertNil(receiveError(pair.relay, try encodeRecord([.control(.fin(stream: s.client.id))])))
        guard case .some = receiveError(pair.relay, try encodeRecord([.data(stream: s.client.id, bytes: [1])])) else {
            return XCTFail("DATA after FIN was accepted")
        }
    }

    func testOpenFromTheRelaySideIsAnError() throws {
        let pair = MuxPair()
        let open = Frame.open(stream: 2, window: 1000, proto: .tcp, destination: Destination(host: .domain("a.example"), port: 1))
        guard case .unexpectedOpen(2) = receiveError(pair.client, try encodeRecord([.control(open)])) else {
            return XCTFail("the client accepted an OPEN")
        }
    }

    func testOpenReusingOrSkippingToAnEvenIdIsAnError() throws {
        let pair = MuxPair()
        _ = try pair.openStream()
        _ = try pair.openStream()  // ids 1 and 3 used
        let destination = Destination(host: .ip(IPAddress("192.0.2.1")!), port: 80)
        for id: UInt32 in [1, 3, 6] {
            let record = try encodeRecord([.control(.open(stream: id, window: 1000, proto: .tcp, destination: destination))])
            guard case .unknownStream(id, _) = receiveError(pair.relay, record) else {
                return XCTFail("the relay accepted OPEN for stream \(id)")
            }
        }
        XCTAssertEqual(pair.relayCarrier.requests.count, 2)
    }

    func testMalformedRecordsAreErrors() throws {
        let cases: [(String, [UInt8])] = [
            ("unknown type", [0xEE, 0, 0, 0, 1, 0, 0]),
            ("truncated header", [0x03, 0, 0, 0]),
            ("truncated payload", [0x03, 0, 0, 0, 1, 0, 10, 1, 2]),
            ("empty DATA", [0x03, 0, 0, 0, 1, 0, 0]),
            ("PING on a stream", [0x07, 0, 0, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0]),
            ("CREDIT on stream 0", [0x04, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1]),
            ("short CREDIT", [0x04, 0, 0, 0, 1, 0, 2, 0, 1]),
            ("bad reset reason", [0x06, 0, 0, 0, 1, 0, 1, 99]),
            ("valid PING, then garbage", [0x07, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF]),
        ]
        for (name, record) in cases {
            for side in ["client", "relay"] {
                let pair = MuxPair()
                _ = try pair.openStream()
                let session = side == "client" ? pair.client : pair.relay
                guard case .badFrame = receiveError(session, record) else {
                    XCTFail("\(side) accepted a record with \(name)")
                    continue
                }
            }
        }
    }
}
