/// A strict RFC 8259 parser: no comments, no trailing commas, no single quotes, no NaN, no control
/// characters or invalid UTF-8 in strings, no lone surrogate escapes. Any value may stand at the top.
/// Two things are lenient, as in most parsers: a UTF-8 byte-order mark is skipped, and when an object
/// repeats a key the last value wins.
///
/// Nesting is limited to `maxDepth` arrays and objects, so hostile input (`[[[[…`) is an error, not a
/// stack overflow: the parser, `==` and the writer all recurse once per level.
public struct JSONParser {
    /// The deepest nesting accepted. Sluice's own files nest four levels at most.
    public static let maxDepth = 100

    // Internal, not private: the string reader lives in JSONParser+String.swift.
    let bytes: [UInt8]
    var index = 0
    private var depth = 0

    /// Parses a whole document: one value, with only whitespace around it.
    public static func parse(_ bytes: [UInt8]) throws(JSONError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.index == bytes.count else {
            throw parser.error("expected the end of the text after the value, found \(parser.found)")
        }
        return value
    }

    public static func parse(_ text: String) throws(JSONError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    // MARK: values

    private mutating func value() throws(JSONError) -> JSONValue {
        guard let byte = peek else { throw error("the text ends where a value should be") }
        switch byte {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: return try word()
        }
    }

    private mutating func object() throws(JSONError) -> JSONValue {
        try enter("an object")
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if peek == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            guard peek == UInt8(ascii: "\"") else {
                let after = members.isEmpty ? "a key in double quotes or '}'" : "a key in double quotes after ','"
                let hint = peek == UInt8(ascii: "}") ? " (JSON allows no comma before '}')" : ""
                throw error("expected \(after), found \(found)\(hint)")
            }
            let key = try string()
            skipWhitespace()
            guard peek == UInt8(ascii: ":") else { throw error("expected ':' after the key \(quoted(key)), found \(found)") }
            index += 1
            skipWhitespace()
            members[key] = try value()
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return .object(members)
            case nil:
                throw error("the text ends inside an object: expected ',' or '}' after the value of \(quoted(key))")
            default:
                throw error("expected ',' or '}' after the value of \(quoted(key)), found \(found)")
            }
        }
    }

    private mutating func array() throws(JSONError) -> JSONValue {
        try enter("an array")
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            if peek == UInt8(ascii: "]") { throw error("expected a value after ',', found ']' (JSON allows no comma before ']')") }
            elements.append(try value())
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(elements)
            case nil:
                throw error("the text ends inside an array: expected ',' or ']' after element \(elements.count)")
            default:
                throw error("expected ',' or ']' after element \(elements.count) of an array, found \(found)")
            }
        }
    }

    private mutating func enter(_ what: String) throws(JSONError) {
        depth += 1
        guard depth <= Self.maxDepth else {
            throw error("\(what) nested deeper than \(Self.maxDepth) levels of arrays and objects")
        }
    }

    private mutating func number() throws(JSONError) -> JSONNumber {
        var scanner = NumberScanner(bytes: bytes, index: index)
        let start = index
        if let problem = scanner.scan() {
            index = scanner.index
            throw error(problem + ", found \(found)")
        }
        index = scanner.index
        return JSONNumber(validated: String(decoding: bytes[start..<index], as: UTF8.self))
    }

    /// `true`, `false`, `null`, or an error naming the word found instead.
    private mutating func word() throws(JSONError) -> JSONValue {
        let start = index
        while let byte = peek, byte.isWordByte { index += 1 }
        let word = String(decoding: bytes[start..<index], as: UTF8.self)
        switch word {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        case "":
            index = start
            throw error("expected a value (a string, number, object, array, true, false or null), found \(found)")
        default:
            index = start
            let shown = word.count > 20 ? String(word.prefix(20)) + "…" : word
            throw error("expected a value, found the word \(shown) (strings need double quotes; true, false and null are lower case)")
        }
    }

    // MARK: bytes

    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    /// The byte at `index`, for messages: "'x'", "a line break", "U+00E9", "the end of the text".
    var found: String {
        guard let byte = peek else { return "the end of the text" }
        switch byte {
        case 0x0A, 0x0D: return "a line break"
        case 0x09: return "a tab"
        case 0x20..<0x7F: return "'\(Character(Unicode.Scalar(byte)))'"
        case 0x80...:
            // Show the whole character if the bytes from here are valid UTF-8.
            var iterator = bytes[index...].makeIterator()
            var decoder = UTF8()
            if case .scalarValue(let scalar) = decoder.decode(&iterator) { return "'\(Character(scalar))'" }
            return "a byte 0x\(String(byte, radix: 16, uppercase: true)) that is not UTF-8"
        default: return JSONWriter.unicodeName(UInt32(byte))
        }
    }

    func error(_ problem: String) -> JSONError {
        JSONError(problem, at: index, in: bytes)
    }

    private func quoted(_ key: String) -> String {
        "\"" + (key.count > 40 ? String(key.prefix(40)) + "…" : key) + "\""
    }
}

private extension UInt8 {
    /// ASCII letters, digits and '_': what a mistyped bare word (`sluice0`, `True`, `NaN`) is made of.
    var isWordByte: Bool {
        (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "z")) || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z"))
            || (self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9")) || self == UInt8(ascii: "_")
    }
}
