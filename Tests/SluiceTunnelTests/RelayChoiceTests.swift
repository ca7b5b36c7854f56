import XCTest

@testable import SluiceTunnel

/// The relay-choice state machine alone: failover order, going back to the first relay, spreading by
/// load, and the single relay that behaves like a plain carrier pool.
final class RelayChoiceTests: XCTestCase {
    typealias Plan = RelayChoice.Plan
    typealias Load = RelayChoice.Load

    private let use2 = Plan(carriers: 2, closeCarriers: false)
    private let idle = Plan(carriers: 0, closeCarriers: false)
    private let probe = Plan(carriers: 1, closeCarriers: true)
    private let downQuiet = Plan(carriers: 0, closeCarriers: true)

    func testFailoverUsesTheFirstRelayAndMovesDownTheList() {
        var choice = RelayChoice(relays: 3, policy: .failover, carriers: 2)
        XCTAssertEqual(choice.plan, [use2, idle, idle], "only the first relay is dialled at first")

        XCTAssertTrue(choice.carrierUp(0))
        XCTAssertFalse(choice.carrierUp(0), "a second carrier changes nothing")
        XCTAssertEqual(choice.relay(forNewFlowWith: [Load(carriers: 2, streams: 40), Load(carriers: 0, streams: 0), Load(carriers: 0, streams: 0)]), 0)

        // The first relay's carriers close (it was killed): nothing changes until their redial fails.
        XCTAssertFalse(choice.carrierLost(0, silent: false))
        XCTAssertEqual(choice.plan, [use2, idle, idle])
        XCTAssertTrue(choice.dialFailed(0, upCarriers: 0))
        XCTAssertEqual(choice.active, 1)
        XCTAssertEqual(choice.plan, [probe, use2, idle], "a probe to the first, every carrier to the second")
        XCTAssertNil(choice.relay(forNewFlowWith: [Load(carriers: 0, streams: 0), Load(carriers: 0, streams: 0), Load(carriers: 0, streams: 0)]),
                     "nothing up yet: refused")

        // The second cannot be reached either: the third takes over; both before it are probed.
        XCTAssertTrue(choice.dialFailed(1, upCarriers: 0))
        XCTAssertEqual(choice.plan, [probe, probe, use2])
        XCTAssertTrue(choice.carrierUp(2))
        XCTAssertEqual(choice.relay(forNewFlowWith: [Load(carriers: 0, streams: 0), Load(carriers: 0, streams: 0), Load(carriers: 2, streams: 0)]), 2)
    }

    func testFailoverReturnsToTheFirstForNewFlowsOnly() {
        var choice = RelayChoice(relays: 2, policy: .failover, carriers: 2)
        _ = choice.carrierUp(0)
        XCTAssertTrue(choice.carrierLost(0, silent: true), "silence is enough: the relay is down at once")
        XCTAssertEqual(choice.plan, [probe, use2])
        _ = choice.carrierUp(1)
        XCTAssertEqual(choice.relay(forNewFlowWith: [Load(carriers: 0, streams: 0), Load(carriers: 2, streams: 7)]), 1)

        // The probe got through: the first relay is back, new flows go there, and the second keeps
        // no slots: its carriers (with their 7 streams) stay until those end.
        XCTAssertTrue(choice.carrierUp(0))
        XCTAssertEqual(choice.plan, [use2, idle])
        XCTAssertEqual(choice.relay(forNewFlowWith: [Load(carriers: 1, streams: 0), Load(carriers: 2, streams: 7)]), 0)
    }

    func testADialFailureWithCarriersUpIsNotDown() {
        var choice = RelayChoice(relays: 2, policy: .failover, carriers: 2)
        _ = choice.carrierUp(0)
        XCTAssertFalse(choice.dialFailed(0, upCarriers: 1), "one carrier's redial failed, the other carries on")
        XCTAssertEqual(choice.health, [.up, .unknown])
        XCTAssertFalse(choice.carrierLost(0, silent: false))
        XCTAssertEqual(choice.plan, [use2, idle])
    }

    func testAllDownProbesEveryRelay() {
        var choice = RelayChoice(relays: 2, policy: .failover, carriers: 2)
        _ = choice.dialFailed(0, upCarriers: 0)
        _ = choice.dialFailed(1, upCarriers: 0)
        XCTAssertNil(choice.active)
        XCTAssertEqual(choice.plan, [probe, probe])
        // Whichever answers first is used; the second here, until the first is back.
        _ = choice.carrierUp(1)
        XCTAssertEqual(choice.plan, [probe, use2])
    }

    func testSpreadUsesEveryHealthyRelayAndTheLeastLoaded() {
        var choice = RelayChoice(relays: 3, policy: .spread, carriers: 2)
        XCTAssertEqual(choice.plan, [use2, use2, use2])
        for i in 0..<3 { _ = choice.carrierUp(i) }
        // Streams per carrier: 3/2, 2/1, 2/2 → the third.
        XCTAssertEqual(choice.relay(forNewFlowWith: [Load(carriers: 2, streams: 3), Load(carriers: 1, streams: 2), Load(carriers: 2, streams: 2)]), 2)
        XCTAssertEqual(choice.relay(forNewFlowWith: [Load(carriers: 2, streams: 3), Load(carriers: 1, streams: 0), Load(carriers: 2, streams: 2)]), 1)
        XCTAssertEqual(choice.relay(forNewFlowWith: [Load(carriers: 2, streams: 2), Load(carriers: 2, streams: 2), Load(carriers: 2, streams: 2)]), 0,
                       "ties go by list order")

        // The middle relay goes silent: its carriers close, it is probed, the others take the flows.
        XCTAssertTrue(choice.carrierLost(1, silent: true))
        XCTAssertEqual(choice.plan, [use2, probe, use2])
        XCTAssertEqual(choice.relay(forNewFlowWith: [Load(carriers: 2, streams: 9), Load(carriers: 1, streams: 0), Load(carriers: 2, streams: 8)]), 2,
                       "a relay that is down takes nothing, even with a carrier left")
        XCTAssertTrue(choice.carrierUp(1))
        XCTAssertEqual(choice.plan, [use2, use2, use2])
    }

    func testADownRelayAfterTheOneInUseIsNotProbed() {
        var choice = RelayChoice(relays: 3, policy: .failover, carriers: 1)
        _ = choice.carrierUp(0)
        _ = choice.carrierUp(1)  // a carrier left over from an earlier failover
        XCTAssertTrue(choice.carrierLost(1, silent: true))
        XCTAssertEqual(choice.plan, [Plan(carriers: 1, closeCarriers: false), downQuiet, Plan(carriers: 0, closeCarriers: false)])
    }

    func testOneRelayIsAPlainPool() {
        var choice = RelayChoice(relays: 1, policy: .failover, carriers: 4)
        let all = Plan(carriers: 4, closeCarriers: false)
        XCTAssertEqual(choice.plan, [all])
        _ = choice.carrierUp(0)
        XCTAssertTrue(choice.carrierLost(0, silent: true))
        XCTAssertEqual(choice.plan, [all], "silence on one carrier closes only that one (a balancer may stand for several relays)")
        XCTAssertEqual(choice.relay(forNewFlowWith: [Load(carriers: 3, streams: 10)]), 0, "the carriers still up take flows")
        XCTAssertTrue(choice.dialFailed(0, upCarriers: 0) == false, "already down")
        XCTAssertNil(choice.relay(forNewFlowWith: [Load(carriers: 0, streams: 0)]))
    }
}
