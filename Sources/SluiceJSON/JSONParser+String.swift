/// String literals: escapes, surrogate pairs, and the checks that keep a JSON string a valid Swift
/// string (no raw control characters, valid UTF-8, no lone surrogates).
extension JSONParser {
    /// Reads the string starting at the opening quote at `index`; leaves `index` after the closing one.
    mutating func string() throws(JSONError) -> String {
        let opening = index
        index += 1
        var out: [UInt8] = []
        var runStart = index  // bytes copied in runs, escapes decoded one by one
        while true {
            guard let byte = peek else {
                index = opening
                throw error("the string that starts here has no closing '\"'")
            }
            switch byte {
            case UInt8(ascii: "\""):
                out += bytes[runStart..<index]
                index += 1
                guard let text = String(validating: out, as: UTF8.self) else {
                    let bad = Self.firstInvalidUTF8(in: bytes, from: opening + 1)
                    index = bad
                    throw error("byte 0x\(String(bytes[bad], radix: 16, uppercase: true)) in a string is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                out += bytes[runStart..<index]
                try escape(into: &out)
                runStart = index
            case 0x00..<0x20:
                throw error("\(JSONWriter.unicodeName(UInt32(byte))) (a control character) must be escaped in a string, as \(JSONWriter.escape(byte))")
            default:
                index += 1
            }
        }
    }

    /// One escape sequence at `index` (the backslash), appended to `out` as UTF-8.
    private mutating func escape(into out: inout [UInt8]) throws(JSONError) {
        index += 1
        guard let letter = peek else { throw error("the text ends inside an escape sequence") }
        let simple: UInt8?
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): simple = letter
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"): simple = nil
        default:
            let shown = (0x21..<0x7F).contains(letter) ? "\\\(Character(Unicode.Scalar(letter)))" : "\\ followed by \(found)"
            index -= 1
            throw error("unknown escape \(shown) in a string (valid are \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
        }
        if let simple {
            out.append(simple)
            index += 1
            return
        }
        let start = index - 1
        index += 1
        let first = try hex4()
        var scalar = UInt32(first)
        if (0xD800...0xDBFF).contains(first) {
            // A high surrogate must be followed by `\u` and a low one; together they are one scalar.
            guard peek == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                index = start
                throw error("\\u\(hex(first)) is the first half of a surrogate pair, but no second half (\\uDC00-\\uDFFF) follows")
            }
            index += 2
            let second = try hex4()
            guard (0xDC00...0xDFFF).contains(second) else {
                index = start
                throw error("\\u\(hex(first)) is the first half of a surrogate pair, but \\u\(hex(second)) is not a second half")
            }
            scalar = 0x10000 + (UInt32(first - 0xD800) << 10) + UInt32(second - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(first) {
            index = start
            throw error("\\u\(hex(first)) is the second half of a surrogate pair without a first half")
        }
        out += Array(String(Character(Unicode.Scalar(scalar)!)).utf8)
    }

    /// Four hex digits at `index`.
    private mutating func hex4() throws(JSONError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let byte = peek, let digit = hexDigit(byte) else {
                throw error("expected 4 hex digits after \\u, found \(found)")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    private func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private func hex(_ value: UInt16) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// Offset of the first byte from `start` that does not begin or continue a valid UTF-8 sequence.
    static func firstInvalidUTF8(in bytes: [UInt8], from start: Int) -> Int {
        var offset = start
        var iterator = bytes[start...].makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput, .error: return min(offset, bytes.count - 1)
            }
        }
    }
}
