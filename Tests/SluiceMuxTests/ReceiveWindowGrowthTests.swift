import SluiceMux
import SluiceWire
import XCTest

/// A bulk stream's receive window grows past the announced one (docs/protocol.md §4.3), a stream
/// whose next hop lags does not, and the carrier's growth budget caps all of them together.
final class ReceiveWindowGrowthTests: XCTestCase {
    /// Sends a whole window from the client and lets the relay consume it at once (a next hop that
    /// keeps up); returns the client's credit afterwards (its credit, not `sendCapacity`, which the
    /// carrier budget caps).
    private func sendAndConsumeOneWindow(_ pair: MuxPair, _ s: (client: MuxStream, clientHandler: RecordingHandler,
                                                                relay: MuxStream, relayHandler: RecordingHandler),
                                         seed: UInt8) throws -> Int {
        let window = s.client.sendCredit
        var sent = 0
        while sent < window {  // in carrier budgets, as a sender would
            sent += pattern(window - sent, seed: seed).withUnsafeBytes { s.client.send($0) }
            try pair.pump()
        }
        s.relay.consumed(window)
        try pair.pump()
        return s.client.sendCredit
    }

    func testABulkStreamThatKeepsUpDoublesItsWindowUpToTheMaximum() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        let window = pair.relay.settings.streamWindow
        let maximum = pair.relay.settings.maxStreamWindow
        XCTAssertEqual(s.client.sendWindow, window, "OPEN_OK announces the usual window")

        var credit = window
        var sent = 0
        var seed: UInt8 = 1
        while credit < maximum {
            sent += credit
            let grown = try sendAndConsumeOneWindow(pair, s, seed: seed)
            XCTAssertEqual(grown, 2 * credit, "credit for the window plus its growth")
            credit = grown
            seed += 1
        }
        XCTAssertEqual(credit, maximum, "the default maximum is reached by doubling the usual window")
        sent += credit
        XCTAssertEqual(try sendAndConsumeOneWindow(pair, s, seed: seed), maximum, "no growth past the maximum")

        XCTAssertEqual(s.relayHandler.received.count, sent)
    }

    func testAStreamWhoseNextHopLagsKeepsItsWindow() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        let window = pair.relay.settings.streamWindow
        XCTAssertEqual(pattern(window, seed: 5).withUnsafeBytes { s.client.send($0) }, window)
        try pair.pump()
        // Three quarters leave toward the destination; the rest stays buffered at the relay.
        s.relay.consumed(3 * window / 4)
        try pair.pump()
        XCTAssertEqual(pattern(3 * window / 4, seed: 6).withUnsafeBytes { s.client.send($0) }, 3 * window / 4)
        try pair.pump()
        s.relay.consumed(window / 4)  // a whole window consumed, but 3/4 of one still held: no growth
        try pair.pump()
        XCTAssertEqual(s.client.sendCredit, window / 4)
    }

    func testTheCarrierBudgetCapsGrowthAndAClosedStreamGivesItsGrowthBack() throws {
        var settings = MuxSettings()
        settings.windowGrowthBudget = settings.streamWindow  // room for one doubling
        let pair = MuxPair(relay: settings)
        let window = settings.streamWindow

        let first = try pair.openStream()
        XCTAssertEqual(try sendAndConsumeOneWindow(pair, first, seed: 7), 2 * window)
        let second = try pair.openStream()
        XCTAssertEqual(try sendAndConsumeOneWindow(pair, second, seed: 8), window, "the budget is spent")

        first.client.finish()
        first.relay.finish()
        try pair.pump()
        XCTAssertTrue(first.relay.isClosed)
        let third = try pair.openStream()
        XCTAssertEqual(try sendAndConsumeOneWindow(pair, third, seed: 9), 2 * window, "the first stream's growth came back")
    }

    /// A peer that sends past the grown window still breaks the carrier, as past the announced one.
    func testDataBeyondTheGrownWindowIsAProtocolError() throws {
        var settings = MuxSettings()
        settings.streamWindow = 4096
        settings.maxStreamWindow = 8192
        let pair = MuxPair(relay: settings)
        let s = try pair.openStream()
        let id = s.client.id
        XCTAssertEqual(try sendAndConsumeOneWindow(pair, s, seed: 10), 8192)
        let full = try encodeRecord([.data(stream: id, bytes: pattern(4096, seed: 11)), .data(stream: id, bytes: pattern(4096, seed: 12))])
        XCTAssertNil(receiveError(pair.relay, full), "the grown window is the window")
        guard case .windowExceeded(stream: id) = receiveError(pair.relay, try encodeRecord([.data(stream: id, bytes: [0])])) else {
            return XCTFail("DATA beyond the grown window was accepted")
        }
    }
}
