import SluiceTestSupport
import XCTest

@testable import SluiceWire

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

