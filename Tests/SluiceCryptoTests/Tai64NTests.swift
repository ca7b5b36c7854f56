import XCTest
@testable import SluiceCrypto

final class Tai64NTests: XCTestCase {
    func testEncodingIsLabelThenNanosecondsBigEndian() {
        let t = Tai64N(unixSeconds: 0x0102_0304, nanoseconds: 0x0506_0708)
        XCTAssertEqual(t.bytes, [0x40, 0, 0, 0, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08])
        XCTAssertEqual(Tai64N(bytes: t.bytes), t)
        XCTAssertNil(Tai64N(bytes: [UInt8](repeating: 0, count: 11)))
        XCTAssertNil(Tai64N(bytes: [UInt8](repeating: 0, count: 13)))
    }

    func testOrderFollowsSecondsThenNanoseconds() {
        let a = Tai64N(unixSeconds: 10, nanoseconds: 999_999_999)
        let b = Tai64N(unixSeconds: 11, nanoseconds: 0)
        XCTAssertLessThan(a, b)
        XCTAssertEqual(a.successor, b)
        XCTAssertLessThan(b, b.successor)
        XCTAssertFalse(b < b)
        // Byte order and value order agree, which is what makes the wire form comparable.
        XCTAssertTrue(a.bytes.lexicographicallyPrecedes(b.bytes))
    }

    func testNextIsStrictlyIncreasingAndTracksTheClock() {
        let before = Tai64N.now()
        var previous = Tai64N.next()
        XCTAssertGreaterThanOrEqual(previous, before)
        for _ in 0..<10_000 {
            let current = Tai64N.next()
            XCTAssertGreaterThan(current, previous)
            previous = current
        }
        // 10,000 calls add at most 10 µs of artificial lead over the clock.
        XCTAssertLessThanOrEqual(Int64(bitPattern: previous.label &- Tai64N.now().label), 1, "next() ran away from the clock")
    }
}
