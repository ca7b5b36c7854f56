import XCTest

@testable import SluiceRelay

final class TokenBucketTests: XCTestCase {
    func testBurstThenDebtThenRefill() {
        var bucket = TokenBucket(rate: 1000, now: 0)
        for _ in 0..<1000 { bucket.take(now: 0) }
        XCTAssertEqual(bucket.wait(now: 0), 0, "a full second's worth at once is allowed")
        for _ in 0..<500 { bucket.take(now: 0) }
        XCTAssertEqual(bucket.wait(now: 0), 500, "500 tokens of debt at 1000/s")
        XCTAssertEqual(bucket.wait(now: 200), 300)
        XCTAssertEqual(bucket.wait(now: 500), 0)
        XCTAssertEqual(bucket.wait(now: 10_000), 0)
        XCTAssertEqual(bucket.tokens, 1000, "saved up to the burst, no more")
    }

    func testSteadyRateNeverWaits() {
        var bucket = TokenBucket(rate: 100, now: 0)
        for ms in stride(from: UInt64(0), to: 60_000, by: 10) {
            bucket.take(now: ms)
            XCTAssertEqual(bucket.wait(now: ms), 0)
        }
    }
}
