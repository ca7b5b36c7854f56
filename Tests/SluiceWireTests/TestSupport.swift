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

/// A deterministic generator, so that failures reproduce (SplitMix64).
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
