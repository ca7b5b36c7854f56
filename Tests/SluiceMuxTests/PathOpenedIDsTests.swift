@testable import SluiceMux
import XCTest

final class PathOpenedIDsTests: XCTestCase {
    func testKeepsIdsInOrderAndForgetsThemUpToAnOpen() {
        var ids = PathOpenedIDs()
        XCTAssertTrue(ids.isEmpty)
        XCTAssertFalse(ids.contains(1))
        for id: UInt32 in [5, 9, 7, 13, 3] { ids.insert(id) }  // out of order, as the path may deliver
        for id: UInt32 in [3, 5, 7, 9, 13] { XCTAssertTrue(ids.contains(id), "\(id)") }
        for id: UInt32 in [0, 1, 11, 15] { XCTAssertFalse(ids.contains(id), "\(id)") }
        ids.removeThrough(8)  // an OPEN of 8's neighbourhood: 3, 5 and 7 go
        XCTAssertFalse(ids.contains(7))
        XCTAssertTrue(ids.contains(9))
        ids.removeThrough(9)
        XCTAssertFalse(ids.contains(9))
        XCTAssertTrue(ids.contains(13))
        ids.removeThrough(1)  // below everything: nothing goes
        XCTAssertTrue(ids.contains(13))
        ids.removeThrough(UInt32.max)
        XCTAssertTrue(ids.isEmpty)
    }

    /// Random inserts and OPENs against a set filtered the way the relay used to.
    func testAgreesWithAFilteredSet() {
        var rng = SystemRandomNumberGenerator()
        var ids = PathOpenedIDs()
        var model = Set<UInt32>()
        var newestOpen: UInt32 = 0
        for _ in 0..<20_000 {
            if Bool.random(using: &rng) {
                let id = newestOpen + UInt32.random(in: 1...200, using: &rng)
                if !model.contains(id) {
                    ids.insert(id)
                    model.insert(id)
                }
            } else {
                newestOpen += UInt32.random(in: 0...20, using: &rng)
                ids.removeThrough(newestOpen)
                model = model.filter { $0 > newestOpen }
            }
            XCTAssertEqual(ids.isEmpty, model.isEmpty)
            let probe = newestOpen + UInt32.random(in: 0...200, using: &rng)
            XCTAssertEqual(ids.contains(probe), model.contains(probe), "\(probe)")
        }
    }
}
