import SluiceMux
import SluiceWire
import XCTest

/// Credit windows and the carrier budget (docs/protocol.md §4.3–4).
final class MuxFlowControlTests: XCTestCase {
    func testSenderStopsAtTheWindowAndResumesOnQuarterWindowCredit() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        let window = pair.relay.settings.streamWindow
        let bytes = pattern(window + window / 2, seed: 1)

        let taken = bytes.withUnsafeBytes { s.client.send($0) }
        XCTAssertEqual(taken, window, "send takes exactly the peer's window")
        XCTAssertEqual(s.client.sendCapacity, 0)
        XCTAssertEqual(bytes[taken...].withUnsafeBytes { s.client.send($0) }, 0, "no credit, nothing taken")
        try pair.pump()
        XCTAssertEqual(s.relayHandler.received.count, window)
        XCTAssertEqual(s.client.sendCapacity, 0, "the relay has not consumed anything yet")

        // Credit is returned in batches of a quarter window: one byte short sends nothing.
        s.relay.consumed(window / 4 - 1)
        try pair.pump()
        XCTAssertEqual(s.clientHandler.canSendCount, 0)
        XCTAssertEqual(s.client.sendCapacity, 0)

        s.relay.consumed(1)
        try pair.pump()
        XCTAssertEqual(s.clientHandler.canSendCount, 1, "CREDIT wakes the sender")
        XCTAssertEqual(s.client.sendCapacity, window / 4)

        let rest = bytes[taken...].withUnsafeBytes { s.client.send($0) }
        XCTAssertEqual(rest, window / 4)
        try pair.pump()
        XCTAssertTrue(s.relayHandler.received == Array(bytes[0..<window + window / 4]))
    }

    /// Credit of 31 bytes left after full reads is not worth a read and a frame: the worthwhile
    /// capacity waits for 16 KiB, and reaches it once the peer returns its credit.
    func testWorthwhileCapacityIgnoresSlivers() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        let window = pair.relay.settings.streamWindow
        XCTAssertEqual(s.client.sendWindow, window)
        XCTAssertEqual(s.client.worthwhileSendCapacity, window)

        let bytes = pattern(window - 31, seed: 3)
        XCTAssertEqual(bytes.withUnsafeBytes { s.client.send($0) }, window - 31)
        XCTAssertEqual(s.client.sendCapacity, 31)
        XCTAssertEqual(s.client.worthwhileSendCapacity, 0, "31 bytes are a sliver")
        try pair.pump()

        s.relay.consumed(MuxStream.worthwhileSend)  // below a quarter window: no CREDIT yet
        try pair.pump()
        XCTAssertEqual(s.client.worthwhileSendCapacity, 0)
        s.relay.consumed(window / 4 - MuxStream.worthwhileSend)
        try pair.pump()
        XCTAssertEqual(s.client.sendCapacity, window / 4 + 31)
        XCTAssertEqual(s.client.worthwhileSendCapacity, window / 4 + 31)
    }

    /// With a small peer window the threshold shrinks to a quarter of it, so capacity reaches it.
    func testWorthwhileThresholdFollowsASmallWindow() throws {
        var small = MuxSettings()
        small.streamWindow = 4096
        let pair = MuxPair(relay: small)
        let s = try pair.openStream()
        XCTAssertEqual(s.client.sendWindow, 4096)
        XCTAssertEqual(pattern(3072, seed: 4).withUnsafeBytes { s.client.send($0) }, 3072)
        XCTAssertEqual(s.client.worthwhileSendCapacity, 1024, "a quarter of a 4 KiB window is worth sending")
        XCTAssertEqual(pattern(1, seed: 5).withUnsafeBytes { s.client.send($0) }, 1)
        XCTAssertEqual(s.client.worthwhileSendCapacity, 0)
    }

    /// Credit under a quarter window rides with the next DATA or FIN of the stream, in the same
    /// record: a request/response exchange costs one record each way, not two (a CREDIT record would
    /// cost each end a write or a wake-up per exchange).
    func testSmallCreditRidesWithTheNextDataOrFIN() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        let window = pair.relay.settings.streamWindow
        for exchange in 1...3 {
            XCTAssertEqual([UInt8](repeating: 9, count: 100).withUnsafeBytes { s.client.send($0) }, 100)
            try pair.pump()
            s.relay.consumed(100)
            pair.relay.flush()
            XCTAssertEqual(pair.relayCarrier.records, [], "exchange \(exchange): no record for 100 bytes of credit")
            XCTAssertEqual([UInt8](repeating: 7, count: 10).withUnsafeBytes { s.relay.send($0) }, 10)
            pair.relay.flush()
            XCTAssertEqual(pair.relayCarrier.records.count, 1, "the answer carries the credit")
            try pair.pump()
            XCTAssertEqual(s.client.sendCapacity, window, "exchange \(exchange): the credit arrived with the answer")
            s.client.consumed(10)
        }
        XCTAssertEqual(s.relay.sendCapacity, window - 10, "10 bytes of credit are held back")
        s.client.finish()
        try pair.pump()
        XCTAssertEqual(s.relay.sendCapacity, window, "the FIN brings the credit held back")
        XCTAssertEqual(s.relayHandler.events.last, .fin)
    }

    /// With less than a quarter window held back, the sender keeps three quarters: more than the
    /// worthwhile send it waits for, so holding credit back never stalls it.
    func testHeldBackCreditLeavesAWorthwhileSend() throws {
        for window in [4096, 512 * 1024] {
            var settings = MuxSettings()
            settings.streamWindow = window
            settings.maxStreamWindow = window  // a window that does not grow: exact credit to count
            let pair = MuxPair(client: settings, relay: settings)
            let s = try pair.openStream()
            let bytes = pattern(window, seed: 6)
            XCTAssertEqual(bytes.withUnsafeBytes { s.client.send($0) }, window)
            try pair.pump()
            let heldBack = window / 4 - 1
            s.relay.consumed(window - heldBack)
            s.relay.consumed(heldBack)
            try pair.pump()
            XCTAssertEqual(s.client.sendCapacity, window - heldBack, "window \(window)")
            XCTAssertGreaterThan(s.client.worthwhileSendCapacity, 0, "window \(window)")
        }
    }

    /// The key property: a stream whose reader stopped holds one window of its own, never the
    /// carrier. Another stream on the same session moves 8 MiB past it, over a slow carrier that
    /// makes the budget matter.
    func testStalledStreamDoesNotStopAnotherStream() throws {
        let pair = MuxPair()
        let stalled = try pair.openStream()
        let busy = try pair.openStream()
        let window = pair.relay.settings.streamWindow

        stalled.clientHandler.outgoing = pattern(4 * window, seed: 2)  // its reader never consumes
        stalled.clientHandler.sendOutgoing(on: stalled.client)
        let eightMiB = pattern(8 * 1024 * 1024, seed: 3)
        busy.relayHandler.autoConsume = true
        busy.clientHandler.outgoing = eightMiB
        busy.clientHandler.sendOutgoing(on: busy.client)

        try pair.pump(recordsPerTurn: 3)

        XCTAssertTrue(busy.clientHandler.allSent, "busy stream sent \(busy.clientHandler.outgoingOffset) of \(eightMiB.count)")
        XCTAssertEqual(busy.relayHandler.received.count, eightMiB.count)
        XCTAssertTrue(busy.relayHandler.received == eightMiB, "busy stream's bytes differ")
        XCTAssertEqual(stalled.relayHandler.received.count, window, "the stalled stream got exactly one window")
        XCTAssertEqual(stalled.client.sendCapacity, 0)

        // And once its reader catches up, the stalled stream finishes too.
        stalled.relayHandler.autoConsume = true
        stalled.relay.consumed(window)
        try pair.pump(recordsPerTurn: 3)
        XCTAssertTrue(stalled.clientHandler.allSent)
        XCTAssertTrue(stalled.relayHandler.received == stalled.clientHandler.outgoing)
    }

    func testFullCarrierBudgetStopsSendingUntilDrained() throws {
        let pair = MuxPair()
        let a = try pair.openStream()
        let b = try pair.openStream()
        let budget = pair.client.settings.carrierBudget

        pair.clientCarrier.extraQueued = budget - 100
        XCTAssertEqual(a.client.sendCapacity, 100, "capacity is what the budget has left")
        pair.clientCarrier.extraQueued = budget
        XCTAssertEqual(a.client.sendCapacity, 0)
        XCTAssertEqual(b.client.sendCapacity, 0)

        var wakeOrder: [String] = []
        a.clientHandler.onCanSend = { wakeOrder.append("a") }
        b.clientHandler.onCanSend = { wakeOrder.append("b") }
        a.clientHandler.outgoing = pattern(1000, seed: 4)
        b.clientHandler.outgoing = pattern(1000, seed: 5)
        a.clientHandler.sendOutgoing(on: a.client)
        b.clientHandler.sendOutgoing(on: b.client)
        XCTAssertEqual(a.clientHandler.outgoingOffset, 0)
        XCTAssertEqual(b.clientHandler.outgoingOffset, 0)

        pair.client.carrierDrained()
        XCTAssertEqual(wakeOrder, [], "no wake-up while the budget is still used up")

        pair.clientCarrier.extraQueued = 0
        XCTAssertEqual(wakeOrder, [], "wake-ups come from carrierDrained, not from polling")
        pair.client.carrierDrained()
        XCTAssertEqual(wakeOrder, ["a", "b"], "waiting streams are woken oldest first")
        try pair.pump()
        XCTAssertTrue(a.relayHandler.received == a.clientHandler.outgoing)
        XCTAssertTrue(b.relayHandler.received == b.clientHandler.outgoing)

        pair.client.carrierDrained()
        XCTAssertEqual(wakeOrder, ["a", "b"], "a stream that sent everything is not woken again")
    }

    /// A stream that ran out of credit gets CREDIT while the carrier is full: it must still hear
    /// `streamCanSend` once the carrier drains, or it stays stuck with credit and data.
    func testCreditArrivingWhileTheCarrierIsFullWakesTheStreamOnDrain() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        let window = pair.relay.settings.streamWindow
        s.clientHandler.outgoing = pattern(window + 1000, seed: 6)
        s.clientHandler.sendOutgoing(on: s.client)
        XCTAssertEqual(s.clientHandler.outgoingOffset, window)
        try pair.pump()  // the carrier drains while the stream has no credit

        pair.clientCarrier.extraQueued = pair.client.settings.carrierBudget
        s.relay.consumed(window)
        try pair.pump()
        XCTAssertEqual(s.clientHandler.canSendCount, 0, "no wake-up while the carrier is full")
        XCTAssertEqual(s.client.sendCapacity, 0)

        pair.clientCarrier.extraQueued = 0
        pair.client.carrierDrained()
        XCTAssertEqual(s.clientHandler.canSendCount, 1, "the stream has credit and the carrier drained")
        try pair.pump()
        XCTAssertTrue(s.clientHandler.allSent)
        XCTAssertEqual(s.relayHandler.received.count, window + 1000)
    }

    /// The relay checks `sendCapacity` before reading its socket and, finding 0 because the carrier
    /// is full, asks to be told; without that it would wait for bytes that may never come.
    func testNotifyWhenSendableWakesAStreamThatNeverOfferedBytes() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        pair.clientCarrier.extraQueued = pair.client.settings.carrierBudget
        XCTAssertEqual(s.client.sendCapacity, 0)
        s.client.notifyWhenSendable()
        pair.client.carrierDrained()
        XCTAssertEqual(s.clientHandler.canSendCount, 0, "still full")

        pair.clientCarrier.extraQueued = 0
        pair.client.carrierDrained()
        XCTAssertEqual(s.clientHandler.canSendCount, 1, "woken once the carrier drained")
        pair.client.carrierDrained()
        XCTAssertEqual(s.clientHandler.canSendCount, 1, "and only once")
    }

    /// A handler that closes the session from inside `streamCanSend` must not break the wake-up loop.
    func testClosingTheSessionWhileWakingStreamsIsSafe() throws {
        let pair = MuxPair()
        let a = try pair.openStream()
        let b = try pair.openStream()
        pair.clientCarrier.extraQueued = pair.client.settings.carrierBudget
        a.client.notifyWhenSendable()
        b.client.notifyWhenSendable()
        pair.clientCarrier.extraQueued = 0
        a.clientHandler.onCanSend = { pair.client.close(.closed, message: "test") }
        pair.client.carrierDrained()
        XCTAssertTrue(pair.client.isClosed)
        XCTAssertEqual(b.clientHandler.canSendCount, 0, "a closed session wakes nothing more")
    }
}
