import XCTest

@testable import SluiceCarrier

/// The keepalive's decisions on a made-up clock (docs/protocol.md §5).
final class KeepaliveTests: XCTestCase {
    let s: UInt64 = 1_000_000_000  // one second in nanoseconds
    let start: UInt64 = 1_000 * 1_000_000_000

    func ping(_ decision: Keepalive.Decision) -> UInt64? {
        if case .carryOn(let ping, _) = decision { return ping }
        return nil
    }

    func next(_ decision: Keepalive.Decision) -> UInt64? {
        if case .carryOn(_, let next) = decision { return next }
        return nil
    }

    func testClientPingsEveryIntervalAndMeasuresTheRoundTrip() {
        var k = Keepalive(settings: .client, now: start)
        let first = k.tick(now: start)
        XCTAssertEqual(ping(first), start, "the first PING goes at once; its opaque value is the send time")
        XCTAssertEqual(next(first), start + 5 * s)
        XCTAssertNil(ping(k.tick(now: start + 2 * s)), "not before the interval")
        k.received(now: start + 3 * s)
        k.pong(start, now: start + 3 * s)
        XCTAssertEqual(k.lastRoundTrip, 3 * s)
        XCTAssertEqual(k.lastPong, start + 3 * s)
        XCTAssertEqual(ping(k.tick(now: start + 5 * s)), start + 5 * s, "busy or not, every interval")
        k.pong(12345, now: start + 6 * s)
        XCTAssertEqual(k.lastRoundTrip, 3 * s, "a PONG for no PING of ours is ignored")
    }

    func testClientGivesUpAfterIntervalTimesMisses() {
        var k = Keepalive(settings: .client, now: start)  // 5 s × 3
        var now = start
        var decision = k.tick(now: now)
        while case .carryOn(_, let at) = decision, at < start + 60 * s {
            now = at
            decision = k.tick(now: now)
        }
        XCTAssertEqual(decision, .dead)
        XCTAssertEqual(now, start + 15 * s, "dead exactly 15 s after the first unanswered PING")
    }

    /// A stall right after a PONG: found `interval × misses` after the last byte, not an interval
    /// later when the first unanswered PING went out.
    func testAStallIsFoundIntervalTimesMissesAfterTheLastByte() {
        var k = Keepalive(settings: .client, now: start)
        _ = k.tick(now: start)
        k.received(now: start + s / 10)
        k.pong(start, now: start + s / 10)  // then the path stalls
        var now = start + s / 10
        var decision = k.tick(now: now)
        while case .carryOn(_, let at) = decision, at < start + 60 * s {
            now = at
            decision = k.tick(now: now)
        }
        XCTAssertEqual(decision, .dead)
        XCTAssertEqual(now, start + s / 10 + 15 * s)
    }

    func testDataArrivingKeepsTheCarrierAliveWhilePongsWait() {
        // A PONG can wait behind megabytes of data on a slow link; bytes arriving prove the path works.
        var k = Keepalive(settings: KeepaliveSettings(intervalMilliseconds: 1_000, mode: .probe(misses: 2)), now: start)
        for t in 0..<10 {
            k.received(now: start + UInt64(t) * s)
            XCTAssertNotEqual(k.tick(now: start + UInt64(t) * s), .dead)
        }
        // Silence from 9 s: the oldest PING is from 0 s, so dead once the silence has lasted 2 s.
        XCTAssertNotEqual(k.tick(now: start + 10 * s), .dead)
        XCTAssertEqual(k.tick(now: start + 11 * s), .dead)
    }

    func testAnAnsweredPingClearsTheOlderOnes() {
        var k = Keepalive(settings: KeepaliveSettings(intervalMilliseconds: 1_000, mode: .probe(misses: 3)), now: start)
        for t: UInt64 in 0...2 { XCTAssertEqual(ping(k.tick(now: start + t * s)), start + t * s) }
        k.received(now: start + 2 * s + s / 2)
        k.pong(start + s, now: start + 2 * s + s / 2)  // PONGs come in order: the first is answered too
        XCTAssertEqual(k.lastRoundTrip, 3 * s / 2)
        // The PING of 2 s is the oldest unanswered now: dead at 5.5 s (silence since 2.5 s), not at 3 s.
        XCTAssertNotEqual(k.tick(now: start + 5 * s), .dead)
        XCTAssertEqual(k.tick(now: start + 5 * s + s / 2), .dead)
    }

    func testRelayPingsOnlyASilentPeerAndClosesAfterThirtySeconds() {
        var k = Keepalive(settings: .relay, now: start)
        let first = k.tick(now: start)
        XCTAssertNil(ping(first), "a carrier that just heard from its peer needs no PING")
        XCTAssertEqual(next(first), start + 10 * s)
        k.received(now: start + 8 * s)
        XCTAssertNil(ping(k.tick(now: start + 10 * s)))
        XCTAssertEqual(ping(k.tick(now: start + 18 * s)), start + 18 * s, "10 s of silence")
        XCTAssertNil(ping(k.tick(now: start + 20 * s)))
        XCTAssertEqual(ping(k.tick(now: start + 28 * s)), start + 28 * s, "then every 10 s while it lasts")
        XCTAssertNotEqual(k.tick(now: start + 37 * s), .dead)
        XCTAssertEqual(k.tick(now: start + 38 * s), .dead)
    }

    func testSettings() {
        XCTAssertEqual(KeepaliveSettings.client.deadAfterMilliseconds, 15_000)
        XCTAssertEqual(KeepaliveSettings.relay.deadAfterMilliseconds, 30_000)
        XCTAssertEqual(CarrierEnd.pingTimeout(milliseconds: 1_500).description,
                       "no answer to PING and nothing else received for 1.5 s")
        XCTAssertEqual(CarrierEnd.idleTimeout(milliseconds: 30_000).description, "nothing received for 30 s")
    }
}
