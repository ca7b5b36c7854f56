import SluiceTestSupport
import XCTest
@testable import SluiceIO

final class ByteQueueTests: XCTestCase {
    func testFIFOOrderSurvivesCompactionAndGrowth() {
        let queue = ByteQueue(capacity: 64)
        var model: [UInt8] = []
        var rng = SplitMix64(seed: 5)
        var next: UInt8 = 0
        for _ in 0..<2000 {
            let add = Int.random(in: 0...100, using: &rng)
            let chunk = (0..<add).map { _ -> UInt8 in next &+= 1; return next }
            queue.append(chunk)
            model += chunk
            let take = Int.random(in: 0...min(model.count, 120), using: &rng)
            XCTAssertEqual(Array(queue.readableBytes.prefix(take)), Array(model.prefix(take)))
            queue.consume(take)
            model.removeFirst(take)
            XCTAssertEqual(queue.count, model.count)
        }
        XCTAssertEqual(Array(queue.readableBytes), model)
    }

    func testCompactsBeforeGrowing() {
        let queue = ByteQueue(capacity: 100)
        queue.append([UInt8](repeating: 1, count: 90))
        queue.consume(80)
        _ = queue.reserveWritable(60) // 10 unread + 60 fit in 100 once moved to the front
        XCTAssertEqual(queue.capacity, 100)
        XCTAssertEqual(Array(queue.readableBytes), [UInt8](repeating: 1, count: 10))
        _ = queue.reserveWritable(200)
        XCTAssertGreaterThanOrEqual(queue.capacity, 210)
        XCTAssertEqual(Array(queue.readableBytes), [UInt8](repeating: 1, count: 10))
    }

    func testWriteCommitsOnlyWhatWasReported() {
        let queue = ByteQueue()
        XCTAssertEqual(queue.write(minimum: 10) { buffer in buffer.storeBytes(of: 9, as: UInt8.self); return 1 }, 1)
        XCTAssertEqual(queue.write(minimum: 10) { _ in -1 }, -1)
        XCTAssertEqual(Array(queue.readableBytes), [9])
    }
}
