/// Strict standard base64 (RFC 4648 §4, with `=` padding), as `wg genkey` writes it. A module of its
/// own so that both SluiceConfig (key files and flags) and SluiceCrypto (keys in log lines) use it
/// without depending on each other or on Foundation.
///
/// Foundation's decoder only says "nil"; this one says which character is wrong, so that a mangled key
/// gets an error a person can fix. Non-canonical input (stray bits in the last character) is refused, as
/// wireguard-tools refuses it, so one key has exactly one text form.
public enum Base64 {
    /// Why text is not base64, as a clause ("'!' at position 3 is not a base64 character").
    public struct Failure: Error, Equatable, Sendable {
        public let reason: String
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i], b1 = i + 1 < bytes.count ? bytes[i + 1] : 0, b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(i + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) throws(Failure) -> [UInt8] {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count % 4 == 0 else {
            throw Failure(reason: "its length, \(scalars.count) characters, is not a multiple of 4")
        }
        let padding = scalars.reversed().prefix { $0 == "=" }.count
        guard padding <= 2 else { throw Failure(reason: "it ends in \(padding) '=' characters; at most 2 are allowed") }

        var sextets: [UInt8] = []
        sextets.reserveCapacity(scalars.count)
        for (position, scalar) in scalars.enumerated().dropLast(padding) {
            guard let value = sextet(scalar) else {
                let shown = scalar == "=" ? "'=' at position \(position + 1) is padding in the middle"
                    : "\(describe(scalar)) at position \(position + 1) is not a base64 character"
                throw Failure(reason: shown)
            }
            sextets.append(value)
        }

        var bytes: [UInt8] = []
        bytes.reserveCapacity(sextets.count * 3 / 4)
        var accumulator: UInt32 = 0, bits = 0
        for value in sextets {
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else {
            throw Failure(reason: "its last character carries stray bits, so it is not the canonical form of any key")
        }
        return bytes
    }

    private static func sextet(_ scalar: Unicode.Scalar) -> UInt8? {
        switch scalar.value {
        case 0x41...0x5A: return UInt8(scalar.value - 0x41)
        case 0x61...0x7A: return UInt8(scalar.value - 0x61 + 26)
        case 0x30...0x39: return UInt8(scalar.value - 0x30 + 52)
        case 0x2B: return 62
        case 0x2F: return 63
        default: return nil
        }
    }

    private static func describe(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case " ": return "a space"
        case "\t": return "a tab"
        case "\n", "\r": return "a line break"
        default: return scalar.isASCII && scalar.value >= 0x20 ? "'\(scalar)'" : "U+\(String(scalar.value, radix: 16, uppercase: true))"
        }
    }
}
