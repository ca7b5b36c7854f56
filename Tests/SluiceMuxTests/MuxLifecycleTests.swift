import SluiceMux
import SluiceWire
import XCTest

/// FIN, RESET, carrier loss and liveness (docs/protocol.md §3, §4.5–6, §5).
final class MuxLifecycleTests: XCTestCase {
    func testFINInBothDirectionsClosesTheStream() throws {
        for clientFirst in [true, false] {
            let pair = MuxPair()
            let s = try pair.openStream()
            let (first, firstHandler, second, secondHandler) =
                clientFirst
                ? (s.client, s.clientHandler, s.relay, s.relayHandler)
                : (s.relay, s.relayHandler, s.client, s.clientHandler)

            XCTAssertEqual(Array("last words".utf8).withUnsafeBytes { first.send($0) }, 10)
            first.finish()
            XCTAssertEqual(first.sendCapacity, 0, "no sending after FIN")
            try pair.pump()
            XCTAssertEqual(secondHandler.events.suffix(2), [.data(10), .fin], "data before FIN, FIN last")
            XCTAssertTrue(second.receivedFIN)
            XCTAssertEqual(pair.client.streamCount, 1, "half-closed is still open")
            XCTAssertEqual(pair.relay.streamCount, 1)

            // The other direction still works after a half-close.
            XCTAssertEqual(Array("reply".utf8).withUnsafeBytes { second.send($0) }, 5)
            second.finish()
            try pair.pump()
            XCTAssertEqual(firstHandler.events.suffix(2), [.data(5), .fin])
            XCTAssertEqual(String(decoding: firstHandler.received, as: UTF8.self), "reply")
            XCTAssertEqual(pair.client.streamCount, 0, "clientFirst=\(clientFirst)")
            XCTAssertEqual(pair.relay.streamCount, 0, "clientFirst=\(clientFirst)")
            XCTAssertTrue(first.isClosed)
            XCTAssertTrue(second.isClosed)
            XCTAssertFalse(firstHandler.events.contains { if case .reset = $0 { return true } else { return false } })
        }
    }

    func testResetFromEitherSideReachesTheOtherHandlerWithReasonAndMessage() throws {
        for clientResets in [true, false] {
            let pair = MuxPair()
            let s = try pair.openStream()
            let (resetter, resetterHandler, peerHandler) =
                clientResets ? (s.client, s.clientHandler, s.relayHandler) : (s.relay, s.relayHandler, s.clientHandler)
            let eventsBefore = resetterHandler.events
            resetter.reset(.timedOut, message: "gave up after 10 s")
            XCTAssertTrue(resetter.isClosed)
            try pair.pump()
            XCTAssertEqual(peerHandler.resets, [.reset(.timedOut, "gave up after 10 s")])
            XCTAssertEqual(resetterHandler.events, eventsBefore, "the end that resets hears nothing")
            XCTAssertEqual(pair.client.streamCount, 0)
            XCTAssertEqual(pair.relay.streamCount, 0)
        }
    }

    /// A RESET no one waits on (an idle or evicted UDP association) asks for a deferred flush and
    /// rides the next record; any other flushes at the end of the turn. Either way the peer gets it,
    /// and the stream is gone at once on the end that reset it.
    func testAResetNoOneWaitsOnRidesTheNextRecord() throws {
        for clientResets in [true, false] {
            let pair = MuxPair()
            let s = try pair.openStream()
            let (resetter, resetterCarrier, peerHandler) =
                clientResets ? (s.client, pair.clientCarrier, s.relayHandler) : (s.relay, pair.relayCarrier, s.clientHandler)
            let (flushes, deferred) = (resetterCarrier.flushRequests, resetterCarrier.deferredFlushRequests)
            resetter.reset(.timedOut, message: "idle", urgent: false)
            XCTAssertTrue(resetter.isClosed)
            XCTAssertEqual(resetterCarrier.flushRequests, flushes, "no flush of its own")
            XCTAssertEqual(resetterCarrier.deferredFlushRequests, deferred + 1)
            try pair.pump()
            XCTAssertEqual(peerHandler.resets, [.reset(.timedOut, "idle")], "it arrives with the next flush")

            let t = try pair.openStream()
            let (urgentResetter, urgentCarrier) = clientResets ? (t.client, pair.clientCarrier) : (t.relay, pair.relayCarrier)
            let before = urgentCarrier.flushRequests
            urgentResetter.reset(.refused)
            XCTAssertEqual(urgentCarrier.flushRequests, before + 1, "a RESET someone waits on flushes this turn")
        }
    }

    func testRelayRefusingAnOpenResetsTheClientStreamWithoutOpening() throws {
        let pair = MuxPair(autoAccept: false)
        pair.relayCarrier.onRequest = { stream, _ in stream.reset(.refused, message: "connection refused") }
        let handler = RecordingHandler()
        let stream = pair.client.open(to: Destination(host: .domain("example.com"), port: 25), handler: handler)
        try pair.pump()
        XCTAssertEqual(handler.events, [.reset(.refused, "connection refused")])
        XCTAssertTrue(stream.isClosed)
        XCTAssertFalse(stream.isOpen)
        XCTAssertEqual(pair.client.streamCount, 0)
        XCTAssertEqual(pair.relay.streamCount, 0)
    }

    func testLateFramesForAClosedStreamAreIgnored() throws {
        let pair = MuxPair()
        let s = try pair.openStream()
        // The relay sends while the client's RESET is on its way: both cross on the wire.
        XCTAssertEqual([UInt8](repeating: 1, count: 3000).withUnsafeBytes { s.relay.send($0) }, 3000)
        s.relay.finish()
        s.client.reset(.closed)
        let clientEvents = s.clientHandler.events
        try pair.pump()
        XCTAssertEqual(s.clientHandler.events, clientEvents, "no callbacks after the local reset")
        XCTAssertEqual(s.relayHandler.resets, [.reset(.closed, "")])

        // Every stream frame a peer may still have in flight for a closed stream, on both ends.
        let id = s.client.id
        let late: [TestFrame] = [
            .data(stream: id, bytes: [1, 2, 3]), .control(.credit(stream: id, increment: 100)),
            .control(.fin(stream: id)), .control(.reset(stream: id, reason: .closed, message: "late")),
        ]
        let record = try encodeRecord(late)
        XCTAssertNil(receiveError(pair.client, record))
        XCTAssertNil(receiveError(pair.client, try encodeRecord([.control(.openOK(stream: id, window: 1000))])))
        XCTAssertNil(receiveError(pair.relay, record))
        XCTAssertEqual(s.clientHandler.events, clientEvents)
        XCTAssertEqual(s.relayHandler.resets.count, 1)
        XCTAssertEqual(pair.client.streamCount, 0)
        XCTAssertEqual(pair.relay.streamCount, 0)
    }

    func testCloseResetsEveryLiveStreamExactlyOnce() throws {
        let pair = MuxPair()
        let a = try pair.openStream()
        let b = try pair.openStream()
        let finished = try pair.openStream()
        finished.client.finish()
        finished.relay.finish()
        try pair.pump()
        XCTAssertEqual(pair.client.streamCount, 2)

        // A handler that calls back into the session from its reset must not cause a second reset.
        a.clientHandler.onReset = { stream in
            stream.session.close(.closed, message: "again")
            stream.reset(.closed)
        }
        pair.client.close(.unreachable, message: "carrier lost")
        XCTAssertTrue(pair.client.isClosed)
        XCTAssertEqual(a.clientHandler.resets, [.reset(.unreachable, "carrier lost")])
        XCTAssertEqual(b.clientHandler.resets, [.reset(.unreachable, "carrier lost")])
        XCTAssertEqual(finished.clientHandler.resets, [])
        XCTAssertEqual(pair.client.streamCount, 0)
        XCTAssertTrue(a.client.isClosed && b.client.isClosed)

        pair.client.close(.protocolError, message: "twice")
        XCTAssertEqual(a.clientHandler.resets.count, 1)
        XCTAssertEqual(b.clientHandler.resets.count, 1)

        // A closed session sends nothing and ignores what still arrives.
        XCTAssertEqual([UInt8](repeating: 0, count: 10).withUnsafeBytes { a.client.send($0) }, 0)
        pair.client.ping(1)
        pair.client.flush()
        XCTAssertEqual(pair.clientCarrier.takeRecords(), [])
        XCTAssertNil(receiveError(pair.client, try encodeRecord([.data(stream: b.client.id, bytes: [1])])))
        XCTAssertEqual(b.clientHandler.events.last, .reset(.unreachable, "carrier lost"))

        // The relay's own close resets its handlers once each, too.
        pair.relay.close(.closed, message: "shutting down")
        XCTAssertEqual(a.relayHandler.resets, [.reset(.closed, "shutting down")])
        XCTAssertEqual(b.relayHandler.resets, [.reset(.closed, "shutting down")])
        XCTAssertEqual(finished.relayHandler.resets, [])
        XCTAssertEqual(pair.relay.streamCount, 0)
    }

    func testPingIsAnsweredByPongWithTheSameValue() throws {
        let pair = MuxPair()
        let cases: [(MuxSession, MemoryCarrier, MuxSession, MemoryCarrier)] = [
            (pair.client, pair.clientCarrier, pair.relay, pair.relayCarrier),
            (pair.relay, pair.relayCarrier, pair.client, pair.clientCarrier),
        ]
        for (index, (pinger, pingerCarrier, answerer, answererCarrier)) in cases.enumerated() {
            let opaque: UInt64 = 0x0123_4567_89AB_CDEF &+ UInt64(index)
            pinger.ping(opaque)
            pinger.flush()
            let pings = pingerCarrier.takeRecords()
            XCTAssertEqual(pings.count, 1)
            XCTAssertEqual(try decodeFrames(pings[0]), [.control(.ping(opaque))])
            XCTAssertNil(receiveError(answerer, pings[0]))
            XCTAssertGreaterThan(answererCarrier.flushRequests, 0, "the answer asks for a flush")
            answerer.flush()
            let pongs = answererCarrier.takeRecords()
            XCTAssertEqual(pongs.count, 1)
            XCTAssertEqual(try decodeFrames(pongs[0]), [.control(.pong(opaque))])
            XCTAssertNil(receiveError(pinger, pongs[0]), "a PONG is accepted silently")
            pinger.flush()
            XCTAssertEqual(pingerCarrier.takeRecords(), [], "a PONG is not answered")
        }
    }

    func testGoAwayClosedIsOrderlyAndOtherReasonsAreErrors() throws {
        let pair = MuxPair()
        XCTAssertNil(receiveError(pair.client, try encodeRecord([.control(.goAway(.closed))])))
        XCTAssertTrue(pair.client.peerGoingAway)
        guard case .peerWentAway(.limit) = receiveError(pair.relay, try encodeRecord([.control(.goAway(.limit))])) else {
            return XCTFail("GO_AWAY(limit) should be an error")
        }
    }
}
