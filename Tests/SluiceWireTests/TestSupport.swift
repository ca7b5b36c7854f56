import SluiceTestSupport
import XCTest

@testable import SluiceWire

/// Bytes from hex text; spaces and newlines are ignored.
func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }.map { UInt8(String($0), radix: 16)! }
    precondition(digits.count % 2 == 0, "odd number of hex digits")
    return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
}

/// Asserts that `body` throws exactly `expected`.
func assertThrows<T>(
    _ expected: WireError, _ message: @autoclosure () -> String = "", file: StaticString = #filePath,
    line: UInt = #line, _ body: () throws -> T
) {
    do {
        _ = try body()
        XCTFail("expected \(expected), got no error \(message())", file: file, line: line)
    } catch {
        XCTAssertEqual(error as? WireError, expected, message(), file: file, line: line)
    }
}

/// Asserts that `body` throws some WireError (and, by running at all, that it did not trap).
func assertThrowsAny<T>(
    _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line,
    _ body: () throws -> T
) {
    do {
        _ = try body()
        XCTFail("expected an error \(message())", file: file, line: line)
    } catch {
        XCTAssertTrue(error is WireError, "\(error) \(message())", file: file, line: line)
    }
}

