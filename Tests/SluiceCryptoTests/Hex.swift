/// Hex helpers for fixtures and assertions; tests only.
enum Hex {
    static func decode(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        precondition(digits.count % 2 == 0, "odd-length hex: \(text)")
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: preconditionFailure("not a hex digit in \(text)")
            }
        }
        return stride(from: 0, to: digits.count, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
    }

    static func encode(_ bytes: [UInt8]) -> String {
        let table = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(table[Int(b >> 4)]); out.append(table[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
