import Dispatch
import Synchronization
import SluiceCrypto
import XCTest

@testable import SluiceRelay

/// `ClientLimits`: a client's caps hold over all workers, taken from several threads at once.
final class ClientLimitsTests: XCTestCase {
    let alice = ClientID(key: PrivateKey.generate().publicKey)
    let bob = ClientID(key: PrivateKey.generate().publicKey)

    func testStreamCapHoldsAcrossThreadsRacingForTheLastSlots() {
        let limits = ClientLimits(workers: 4)
        let taken = Counter(), alice = alice
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<1000 where limits.takeStreamSlot(alice, cap: 100) { taken.add() }
        }
        XCTAssertEqual(taken.value, 100, "four workers together took exactly the cap")
        XCTAssertEqual(limits.streams(of: alice), 100)
        XCTAssertFalse(limits.takeStreamSlot(alice, cap: 100))
        XCTAssertTrue(limits.takeStreamSlot(bob, cap: 100), "another client has slots of its own")
        limits.releaseStreamSlot(alice)
        XCTAssertTrue(limits.takeStreamSlot(alice, cap: 100), "a released slot is free for any worker")
    }

    func testMappingCapEvictsHereWhenThisWorkerHoldsAnotherElseWhereMostAre() {
        let limits = ClientLimits(workers: 3)
        XCTAssertNil(limits.addMapping(alice, on: 1, cap: 3))
        XCTAssertNil(limits.addMapping(alice, on: 1, cap: 3))
        XCTAssertNil(limits.addMapping(alice, on: 2, cap: 3))
        XCTAssertEqual(limits.udpMappings(of: alice), 3)
        XCTAssertEqual(limits.addMapping(alice, on: 0, cap: 3), 1, "worker 0 holds no other: worker 1, holding the most, evicts")
        limits.removeMapping(alice, on: 1)
        XCTAssertEqual(limits.addMapping(alice, on: 2, cap: 3), 2, "worker 2 holds another: it evicts its own")
        limits.removeMapping(alice, on: 2)
        XCTAssertEqual(limits.udpMappings(of: alice), 3)
        XCTAssertNil(limits.addMapping(bob, on: 0, cap: 3), "another client's count is its own")
    }

    func testStreamRateIsOneBucketForAllWorkers() {
        let limits = ClientLimits(workers: 2)
        // Ten opens a second, in bursts of ten: the burst spent half on each worker, the next waits.
        for i in 0..<10 { XCTAssertEqual(limits.takeOpen(alice, rate: 10, now: 1000), 0, "open \(i) of the burst") }
        XCTAssertEqual(limits.takeOpen(alice, rate: 10, now: 1000), 100, "the eleventh waits a tenth of a second, whichever worker asks")
        XCTAssertEqual(limits.takeOpen(bob, rate: 10, now: 1000), 0)
        limits.resetRates()
        XCTAssertEqual(limits.takeOpen(alice, rate: 10, now: 1000), 0, "a reload's new rate starts a new bucket")
    }
}

/// A count several threads add to.
private final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
