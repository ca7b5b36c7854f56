import SluiceMux
import XCTest

/// `MuxStream.send(upTo:filling:)`: DATA whose payload a `read(2)` writes straight into the record
/// being assembled (the relay's destination → client path), framed and flow-controlled as `send(_:)`.
final class MuxFillingSendTests: XCTestCase {
    /// Sends `bytes` from the relay with filling sends of at most `sendCapacity`, as the relay's
    /// destination link reads its socket; returns the room each fill was offered.
    private func fillAll(_ bytes: [UInt8], on stream: MuxStream, pair: MuxPair) throws -> [Int] {
        var offset = 0
        var rooms: [Int] = []
        while offset < bytes.count {
            let capacity = stream.sendCapacity
            if capacity == 0 {
                try pair.pump()
                continue
            }
            let n = stream.send(upTo: capacity) { room in
                rooms.append(room.count)
                let n = min(room.count, bytes.count - offset)
                bytes.withUnsafeBytes { room.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
                return n
            }
            XCTAssertLessThanOrEqual(n, capacity)
            offset += n
        }
        try pair.pump()
        return rooms
    }

    /// More than a window, so credit must come back between fills; every byte arrives in order, no
    /// DATA frame is longer than `maxDataFrame`, and records hold two full frames each as with
    /// `send(_:)` (not one frame per record, which would double the records sealed per byte).
    func testFilledBytesArriveIntactInFramesOfAtMostMaxDataFrameAndFullRecords() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        s.clientHandler.autoConsume = true
        let down = pattern(2 * 1024 * 1024 + 333, seed: 9)
        let sealedBefore = pair.relayCarrier.sealedCount
        let rooms = try fillAll(down, on: s.relay, pair: pair)

        XCTAssertEqual(s.clientHandler.received.count, down.count)
        XCTAssertTrue(s.clientHandler.received == down, "relay → client bytes differ")
        XCTAssertLessThanOrEqual(rooms.max() ?? 0, pair.relay.settings.maxDataFrame)
        let deliveries = s.clientHandler.events.compactMap { event -> Int? in
            if case .data(let n) = event { return n } else { return nil }
        }
        XCTAssertLessThanOrEqual(deliveries.max() ?? 0, pair.relay.settings.maxDataFrame)
        let records = pair.relayCarrier.sealedCount - sealedBefore
        XCTAssertLessThanOrEqual(records, down.count / 60_000 + 2, "\(records) records for \(down.count) bytes")
    }

    /// A fill that reads nothing (EAGAIN) or hits EOF frames nothing and costs no credit.
    func testAFillReturningZeroOrLessSendsNothing() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        let capacity = s.relay.sendCapacity
        let sealedBefore = pair.relayCarrier.sealedCount
        for result in [0, -1] {
            XCTAssertEqual(s.relay.send(upTo: 100) { _ in result }, result)
        }
        try pair.pump()
        XCTAssertEqual(pair.relayCarrier.sealedCount, sealedBefore, "a record was sealed for nothing")
        XCTAssertEqual(s.relay.sendCapacity, capacity)
        XCTAssertEqual(s.clientHandler.events, [.open])
    }

    /// The fill gets no more room than asked for; credit held back for the peer goes out before
    /// the room is handed out, so the filled bytes are not overwritten by the CREDIT frame.
    func testTheRoomIsAtMostTheMaximumAndHeldBackCreditRidesAlong() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        XCTAssertEqual(Array("ping".utf8).withUnsafeBytes { s.client.send($0) }, 4)
        try pair.pump()
        s.relay.consumed(4)  // less than a quarter window: held back for the next frame
        let clientCapacity = s.client.sendCapacity
        let reply = Array("pong!".utf8)
        let n = s.relay.send(upTo: 5) { room in
            XCTAssertEqual(room.count, 5)
            reply.withUnsafeBytes { room.copyMemory(from: $0) }
            return 5
        }
        XCTAssertEqual(n, 5)
        try pair.pump()
        XCTAssertEqual(String(decoding: s.clientHandler.received, as: UTF8.self), "pong!")
        XCTAssertEqual(s.client.sendCapacity, clientCapacity + 4, "the held-back credit came with the DATA")
    }
}
