import XCTest

@testable import SluiceTunnel

/// The client's UDP path state machine (docs/protocol.md §8), clock in hand.
final class UDPPathMonitorTests: XCTestCase {
    func testValidatesOnTheFirstAnswer() {
        var m = UDPPathMonitor(now: 0)
        XCTAssertEqual(m.state, .validating)
        XCTAssertTrue(m.tick(now: 0, active: false).probe, "the first probe goes at once")
        XCTAssertFalse(m.tick(now: 100, active: false).probe)
        XCTAssertTrue(m.tick(now: 500, active: false).probe, "unanswered: again every 0.5 s")
        XCTAssertEqual(m.answered(sentAt: 500, now: 503), .validated(roundTrip: 3))
        XCTAssertEqual(m.state, .up)
        XCTAssertEqual(m.lastRoundTrip, 3)
        XCTAssertNil(m.answered(sentAt: 0, now: 504), "a late answer changes nothing")
    }

    func testNoAnswerFallsBackAndRetriesWithBackoff() {
        var m = UDPPathMonitor(now: 0)
        _ = m.tick(now: 0, active: true)
        var t: UInt64 = 0
        var lost: UDPPathMonitor.Change?
        while lost == nil && t < 10_000 {
            t += 250
            lost = m.tick(now: t, active: true).change
        }
        XCTAssertEqual(t, 2_000, "given up 2 s after the first probe")
        XCTAssertEqual(lost, .lost(wasUp: false, why: "no answer to probes for 2 s"))
        XCTAssertEqual(m.state, .down)
        XCTAssertFalse(m.tick(now: 2_900, active: true).probe)
        XCTAssertTrue(m.tick(now: 3_000, active: true).probe, "retried after 1 s")
        XCTAssertEqual(m.state, .validating)
        XCTAssertNotNil(m.tick(now: 5_000, active: true).change)
        XCTAssertFalse(m.tick(now: 6_900, active: true).probe)
        XCTAssertTrue(m.tick(now: 7_000, active: true).probe, "then after 2 s")
        _ = m.tick(now: 9_000, active: true)
        XCTAssertFalse(m.tick(now: 12_900, active: true).probe)
        XCTAssertTrue(m.tick(now: 13_000, active: true).probe, "then 4 s")
        XCTAssertEqual(m.answered(sentAt: 13_000, now: 13_001), .validated(roundTrip: 1))
        XCTAssertEqual(m.backoff, 1_000, "a success starts the backoff over")
    }

    func testBackoffIsCappedAndWaitsForUDPFlows() {
        var m = UDPPathMonitor(now: 0)
        var t: UInt64 = 0
        for _ in 0..<20 {
            _ = m.tick(now: t, active: true)
            t += 2_000
            _ = m.tick(now: t, active: true)
            t += m.backoff
        }
        XCTAssertEqual(m.backoff, 8_000, "1 s doubling to 8 s")
        _ = m.tick(now: t, active: true)
        t += 2_000
        _ = m.tick(now: t, active: true)
        XCTAssertEqual(m.state, .down)
        XCTAssertFalse(m.tick(now: t + 60_000, active: false).probe, "no retry while the carrier has no UDP association")
        XCTAssertTrue(m.tick(now: t + 60_001, active: true).probe)
    }

    func testAnUpPathIsProbedWhenSilentAndGivenUpWhenItStopsAnswering() {
        var m = UDPPathMonitor(now: 0)
        _ = m.tick(now: 0, active: true)
        _ = m.answered(sentAt: 0, now: 1)
        m.sentDatagram(now: 100)
        XCTAssertFalse(m.tick(now: 900, active: true).probe)
        XCTAssertTrue(m.tick(now: 1_001, active: true).probe, "sent, nothing back for 1 s: a probe")
        m.received(now: 1_100)  // a datagram from the relay proves only one direction
        XCTAssertFalse(m.tick(now: 1_200, active: true).probe)
        XCTAssertTrue(m.tick(now: 1_501, active: true).probe, "the probe itself is repeated")
        XCTAssertNil(m.tick(now: 2_900, active: true).change)
        XCTAssertEqual(m.tick(now: 3_001, active: true).change, .lost(wasUp: true, why: "the path stopped answering probes for 2 s"))
        XCTAssertEqual(m.state, .down)
    }

    func testBusyPathIsProbedEveryFiveSecondsAndIdleOneKeptAlive() {
        var m = UDPPathMonitor(now: 0)
        _ = m.tick(now: 0, active: true)
        _ = m.answered(sentAt: 0, now: 0)
        var t: UInt64 = 0
        var probes: [UInt64] = []
        while t < 12_000 {  // datagrams both ways all the time
            t += 100
            m.sentDatagram(now: t)
            m.received(now: t)
            if m.tick(now: t, active: true).probe {
                probes.append(t)
                _ = m.answered(sentAt: t, now: t)
            }
        }
        XCTAssertEqual(probes, [5_000, 10_000])
        // Then nothing moves: one probe for the silence after the datagrams, and a keepalive 15 s
        // after the last packet sent, only while the carrier has UDP associations.
        XCTAssertTrue(m.tick(now: t + 1_000, active: true).probe)
        _ = m.answered(sentAt: t + 1_000, now: t + 1_000)
        XCTAssertFalse(m.tick(now: t + 15_999, active: true).probe)
        XCTAssertFalse(m.tick(now: t + 16_000, active: false).probe)
        XCTAssertTrue(m.tick(now: t + 16_000, active: true).probe)
    }

    func testSocketFailureIsImmediate() {
        var m = UDPPathMonitor(now: 0)
        XCTAssertEqual(m.failed(now: 10, why: "connection refused"), .lost(wasUp: false, why: "connection refused"))
        XCTAssertNil(m.failed(now: 11, why: "again"))
        XCTAssertEqual(m.state, .down)
    }
}
