/// A JSON number, kept as its literal text ("1400", "-2.5e3") so that nothing is rounded or clipped on
/// the way through: a 64-bit inode survives, and `1e400` can still be quoted back in an error message.
/// The accessors say whether it fits a Swift type exactly.
public struct JSONNumber: Hashable, Sendable, CustomStringConvertible {
    /// The literal, valid by RFC 8259 §6 (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
    public let text: String

    /// A number from JSON text; nil if `text` is not a JSON number literal.
    public init?(_ text: String) {
        guard Self.isLiteral(Array(text.utf8)) else { return nil }
        self.text = text
    }

    /// Already checked by the parser.
    init(validated text: String) {
        self.text = text
    }

    public init<T: BinaryInteger>(_ value: T) {
        text = String(value)
    }

    /// Nil for infinity and NaN, which JSON cannot hold.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        // Swift prints the shortest text that reads back as the same double: "2.5", "1e-05", "5.0".
        text = value.description
    }

    public var description: String { text }

    /// True for a literal without fraction or exponent ("42", "-7").
    public var isIntegerLiteral: Bool {
        !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    /// The value as a double, or nil when it is outside the double range (`1e400`).
    /// Like every double, large or long values are rounded.
    public var double: Double? {
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// The value as `T` when it is a whole number that `T` holds exactly: "300" and "3e2" give 300
    /// for any integer type; "-1" gives nil for `UInt32`, "2.5" nil for every `T`.
    public func integer<T: FixedWidthInteger>(as type: T.Type = T.self) -> T? {
        if isIntegerLiteral { return T(text) }
        guard let value = double else { return nil }
        return T(exactly: value)
    }

    /// RFC 8259 §6 number grammar.
    static func isLiteral(_ bytes: [UInt8]) -> Bool {
        var scanner = NumberScanner(bytes: bytes, index: 0)
        return scanner.scan() == nil && scanner.index == bytes.count
    }
}

/// Reads one number literal from `index`; shared by `JSONNumber(_:)` and the parser, so both accept the
/// same grammar. `scan` returns nil when the literal is well-formed, else what was expected.
struct NumberScanner {
    let bytes: [UInt8]
    var index: Int

    /// Nil on success (`index` is then just past the literal), else what is missing, with `index` at
    /// the offending byte.
    mutating func scan() -> String? {
        if peek == UInt8(ascii: "-") { index += 1 }
        guard let first = peek, isDigit(first) else { return "expected a digit" + (index > 0 && bytes[index - 1] == UInt8(ascii: "-") ? " after '-'" : "") }
        index += 1
        if first == UInt8(ascii: "0"), let next = peek, isDigit(next) {
            return "a number may not start with 0 unless it is 0 (a leading zero)"
        }
        skipDigits()
        if peek == UInt8(ascii: ".") {
            index += 1
            guard let next = peek, isDigit(next) else { return "expected a digit after the decimal point" }
            skipDigits()
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard let next = peek, isDigit(next) else { return "expected a digit in the exponent" }
            skipDigits()
        }
        return nil
    }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while let byte = peek, isDigit(byte) { index += 1 }
    }
}
