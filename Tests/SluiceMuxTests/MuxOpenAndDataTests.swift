import SluiceMux
import SluiceWire
import XCTest

/// Opening a stream (OPEN, OPEN_OK) and moving its bytes (docs/protocol.md §3, §4.1–2).
final class MuxOpenAndDataTests: XCTestCase {
    func testOpenCarriesTheDestinationAndAcceptOpensTheClientStream() throws {
        let destinations = [
            Destination(host: .ip(IPAddress("203.0.113.7")!), port: 443),
            Destination(host: .ip(IPAddress("2001:db8::7")!), port: 8443),
            Destination(host: .domain("example.com"), port: 80),
        ]
        let pair = MuxPair(autoAccept: false)
        for (index, destination) in destinations.enumerated() {
            let handler = RecordingHandler()
            let stream = pair.client.open(to: destination, handler: handler)
            XCTAssertEqual(stream.id, UInt32(2 * index + 1), "client ids are odd and increasing")
            try pair.pump()

            XCTAssertEqual(pair.relayCarrier.requests.count, index + 1)
            let request = try XCTUnwrap(pair.relayCarrier.requests.last)
            XCTAssertEqual(request.destination, destination)
            XCTAssertEqual(request.stream.id, stream.id)
            XCTAssertEqual(handler.events, [], "nothing before the relay accepts")
            XCTAssertFalse(stream.isOpen)
            XCTAssertEqual(stream.sendCapacity, 0, "no sending before OPEN_OK")

            let relayHandler = RecordingHandler()
            request.stream.handler = relayHandler
            request.stream.accept()
            try pair.pump()
            XCTAssertEqual(handler.events, [.open])
            XCTAssertTrue(stream.isOpen)
            XCTAssertEqual(stream.sendCapacity, pair.relay.settings.streamWindow, "OPEN_OK grants the relay's window")
            XCTAssertEqual(request.stream.sendCapacity, pair.client.settings.streamWindow, "OPEN granted the client's window")
        }
        XCTAssertEqual(pair.client.streamCount, 3)
        XCTAssertEqual(pair.relay.streamCount, 3)
    }

    func testWindowsFromSettingsTravelInOpenAndOpenOK() throws {
        var clientSettings = MuxSettings()
        clientSettings.streamWindow = 10_000
        var relaySettings = MuxSettings()
        relaySettings.streamWindow = 7_000
        let pair = MuxPair(client: clientSettings, relay: relaySettings)
        let s = try pair.openStream()
        XCTAssertEqual(s.client.sendCapacity, 7_000)
        XCTAssertEqual(s.relay.sendCapacity, 10_000)
    }

    func testSmallPayloadsArriveIntactAndInOrderBothWays() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        for word in ["one", "two", "three"] {
            XCTAssertEqual(Array(word.utf8).withUnsafeBytes { s.client.send($0) }, word.utf8.count)
        }
        XCTAssertEqual(Array("back".utf8).withUnsafeBytes { s.relay.send($0) }, 4)
        try pair.pump()
        XCTAssertEqual(String(decoding: s.relayHandler.received, as: UTF8.self), "onetwothree")
        XCTAssertEqual(String(decoding: s.clientHandler.received, as: UTF8.self), "back")
        XCTAssertEqual(s.clientHandler.events, [.open, .data(4)])
    }

    /// 200 KiB each way: more than one DATA frame (32 KiB) and more than one record (64 KiB), less
    /// than a window, so it all goes at once.
    func testLargePayloadsSplitAcrossFramesAndRecordsArriveIntactBothWays() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        let up = pattern(200 * 1024, seed: 1)
        let down = pattern(200 * 1024, seed: 2)
        let sealedBefore = pair.clientCarrier.sealedCount
        XCTAssertEqual(up.withUnsafeBytes { s.client.send($0) }, up.count)
        XCTAssertEqual(down.withUnsafeBytes { s.relay.send($0) }, down.count)
        try pair.pump()

        XCTAssertEqual(s.relayHandler.received.count, up.count)
        XCTAssertTrue(s.relayHandler.received == up, "client → relay bytes differ")
        XCTAssertEqual(s.clientHandler.received.count, down.count)
        XCTAssertTrue(s.clientHandler.received == down, "relay → client bytes differ")
        XCTAssertGreaterThanOrEqual(pair.clientCarrier.sealedCount - sealedBefore, 4, "200 KiB needs at least 4 records")
        let deliveries = s.relayHandler.events.compactMap { event -> Int? in
            if case .data(let n) = event { return n } else { return nil }
        }
        XCTAssertGreaterThanOrEqual(deliveries.count, 7, "200 KiB needs at least 7 DATA frames of 32 KiB")
        XCTAssertLessThanOrEqual(deliveries.max() ?? 0, pair.client.settings.maxDataFrame)
    }

    /// More than several windows each way, with readers that return credit as they go.
    func testTransfersLargerThanTheWindowCompleteWithCredit() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        let up = pattern(3 * 1024 * 1024 + 17, seed: 3)
        let down = pattern(2 * 1024 * 1024 + 5, seed: 4)
        s.relayHandler.autoConsume = true
        s.clientHandler.autoConsume = true
        s.clientHandler.outgoing = up
        s.relayHandler.outgoing = down
        s.clientHandler.sendOutgoing(on: s.client)
        s.relayHandler.sendOutgoing(on: s.relay)
        XCTAssertEqual(s.clientHandler.outgoingOffset, pair.relay.settings.streamWindow, "the first send stops at the window")
        try pair.pump()
        XCTAssertTrue(s.clientHandler.allSent)
        XCTAssertTrue(s.relayHandler.allSent)
        XCTAssertTrue(s.relayHandler.received == up, "client → relay bytes differ")
        XCTAssertTrue(s.clientHandler.received == down, "relay → client bytes differ")
    }

    func testStreamsKeepTheirBytesApart() throws {
        let pair = MuxPair()
        let a = try pair.openStream()
        let b = try pair.openStream()
        let bytesA = pattern(100_000, seed: 5)
        let bytesB = pattern(90_000, seed: 6)
        // Interleave the sends so that frames of both streams share records.
        for offset in stride(from: 0, to: 100_000, by: 10_000) {
            XCTAssertEqual(bytesA[offset..<offset + 10_000].withUnsafeBytes { a.client.send($0) }, 10_000)
            if offset < 90_000 {
                XCTAssertEqual(bytesB[offset..<offset + 10_000].withUnsafeBytes { b.client.send($0) }, 10_000)
            }
        }
        try pair.pump()
        XCTAssertTrue(a.relayHandler.received == bytesA)
        XCTAssertTrue(b.relayHandler.received == bytesB)
    }
}
