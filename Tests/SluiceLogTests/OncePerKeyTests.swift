import SluiceLog
import XCTest

final class OncePerKeyTests: XCTestCase {
    func testOncePerKeyWithinCapacityThenOldestForgotten() {
        var once = OncePerKey<Int>(capacity: 3)
        XCTAssertEqual([1, 2, 1, 3, 2].map { once.isFirst($0) }, [true, true, false, true, false])
        XCTAssertEqual(once.count, 3)
        XCTAssertTrue(once.isFirst(4), "a fourth key pushes out the oldest, 1")
        XCTAssertEqual(once.count, 3)
        XCTAssertFalse(once.isFirst(2))
        XCTAssertTrue(once.isFirst(1), "1 was forgotten")
        XCTAssertFalse(once.isFirst(4))
    }

    func testBoundedUnderAFlood() {
        var once = OncePerKey<Int>(capacity: 256)
        for i in 0..<100_000 { XCTAssertTrue(once.isFirst(i)) }
        XCTAssertEqual(once.count, 256)
    }
}
