/// Prints a `JSONValue` as JSON text: object keys sorted (by UTF-8 bytes, so the output is the same on
/// every machine), strings escaped as RFC 8259 §7 requires — `"` and `\` and the control characters
/// U+0000–U+001F, the usual ones by letter (`\n`), the rest as `\u00XX` — and everything else,
/// non-ASCII included, written as UTF-8 as it is.
public enum JSONWriter {
    /// `pretty` puts each member and element on its own line, indented by two spaces, with
    /// `"key" : value` as Foundation's `JSONEncoder` writes it; otherwise there is no whitespace at all.
    public static func write(_ value: JSONValue, pretty: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        write(value, pretty: pretty, indent: 0, into: &out)
        return out
    }

    /// The text form, for tests and messages.
    public static func text(_ value: JSONValue, pretty: Bool = true) -> String {
        String(decoding: write(value, pretty: pretty), as: UTF8.self)
    }

    private static func write(_ value: JSONValue, pretty: Bool, indent: Int, into out: inout [UInt8]) {
        switch value {
        case .null: out += "null".utf8
        case .bool(let on): out += (on ? "true" : "false").utf8
        case .number(let number): out += number.text.utf8
        case .string(let text): writeString(text, into: &out)
        case .array(let elements):
            guard !elements.isEmpty else { return out += "[]".utf8 }
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(pretty, indent + 1, into: &out)
                write(element, pretty: pretty, indent: indent + 1, into: &out)
            }
            newline(pretty, indent, into: &out)
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else { return out += "{}".utf8 }
            out.append(UInt8(ascii: "{"))
            let keys = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for (i, key) in keys.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(pretty, indent + 1, into: &out)
                writeString(key, into: &out)
                out += (pretty ? " : " : ":").utf8
                write(members[key]!, pretty: pretty, indent: indent + 1, into: &out)
            }
            newline(pretty, indent, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func newline(_ pretty: Bool, _ indent: Int, into out: inout [UInt8]) {
        guard pretty else { return }
        out.append(UInt8(ascii: "\n"))
        out += repeatElement(UInt8(ascii: " "), count: 2 * indent)
    }

    private static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                out += escape(byte).utf8
            } else {
                out.append(byte)  // multi-byte UTF-8 sequences never contain bytes below 0x80
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The escape sequence for a byte that must not appear raw in a string: `\n`, `\"`, `\u001F`.
    static func escape(_ byte: UInt8) -> String {
        switch byte {
        case UInt8(ascii: "\""): return "\\\""
        case UInt8(ascii: "\\"): return "\\\\"
        case 0x08: return "\\b"
        case 0x0C: return "\\f"
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x09: return "\\t"
        default:
            let digits = String(byte, radix: 16, uppercase: true)
            return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
        }
    }

    /// "U+001F".
    static func unicodeName(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
