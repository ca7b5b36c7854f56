import SluiceCrypto
import XCTest

/// The UDP path's sliding replay window (docs/protocol.md §8), table-driven like wireguard-go's
/// `replay_test.go`: each step a counter and whether it must be accepted.
final class ReplayWindowTests: XCTestCase {
    private func run(_ steps: [(UInt64, Bool)], file: StaticString = #filePath, line: UInt = #line) {
        var window = ReplayWindow()
        for (i, (counter, expected)) in steps.enumerated() {
            XCTAssertEqual(window.wouldAccept(counter), expected, "step \(i): wouldAccept(\(counter))", file: file, line: line)
            XCTAssertEqual(window.accept(counter), expected, "step \(i): accept(\(counter))", file: file, line: line)
        }
    }

    func testInOrder() {
        run((0..<5000).map { (UInt64($0), true) })
    }

    func testDuplicatesAreRefused() {
        run([(0, true), (0, false), (1, true), (1, false), (0, false), (5, true), (5, false), (3, true), (3, false)])
    }

    func testReorderedWithinTheWindowAreTaken() {
        let size = ReplayWindow.size
        XCTAssertGreaterThanOrEqual(size, 2048, "the brief asks for a window of at least 2,048")
        run([(10, true), (7, true), (9, true), (8, true), (11, true), (2, true),
             (size + 10, true), (12, true), (10, false), (13, true), (9, false), (size + 9, true), (size + 11, true)])
    }

    func testTooOldIsRefused() {
        let size = ReplayWindow.size
        run([(size + 100, true), (100, true), (99, false), (0, false), (size + 99, true), (size + 101, true), (101, true)])
    }

    /// A long jump clears the whole ring: nothing seen before it counts as seen after.
    func testLongJumpForgetsTheOldWindow() {
        let far = ReplayWindow.size * 10
        run([(1, true), (2, true), (far, true), (far - 1, true), (far - ReplayWindow.size, true),
             (far - ReplayWindow.size - 1, false), (2, false)])
    }

    /// Counters reach the limit and no further; nothing wraps to accept an old counter again.
    func testCounterLimit() {
        let limit = ReplayWindow.counterLimit
        run([(limit - 2, true), (limit - 1, true), (limit, false), (limit + 1, false), (.max, false), (0, false),
             (limit - 1, false), (limit - 3, true)])
    }

    /// `wouldAccept` changes nothing: a packet that fails to authenticate must not move the window.
    func testWouldAcceptIsReadOnly() {
        var window = ReplayWindow()
        XCTAssertTrue(window.accept(100))
        XCTAssertTrue(window.wouldAccept(100_000))
        XCTAssertTrue(window.wouldAccept(50), "still within the window of 100")
        XCTAssertTrue(window.accept(50))
        XCTAssertFalse(window.wouldAccept(50))
    }
}
