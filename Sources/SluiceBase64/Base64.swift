import CSodium

/// Strict standard base64 (RFC 4648 §4, with `=` padding), as `wg genkey` writes it, over libsodium's
/// constant-time codec (`sodium_bin2base64`, `sodium_base642bin`). A module of its own so that both
/// SluiceConfig (key files and flags) and SluiceCrypto (keys in log lines) use it without depending on
/// each other or on Foundation.
///
/// Keys are the secrets this codec handles, so it must not index tables by, or branch on, the bytes of
/// a valid key: libsodium's codec computes every character arithmetically. Only when the text is
/// already refused does the code look at it further, to say which character is wrong so that a
/// mangled key gets an error a person can fix (Foundation's decoder only says "nil"). Non-canonical
/// input (stray bits in the last character) is refused, as wireguard-tools refuses it, so one key has
/// exactly one text form.
public enum Base64 {
    /// Why text is not base64, as a clause ("'!' at position 3 is not a base64 character").
    public struct Failure: Error, Equatable, Sendable {
        public let reason: String
    }

    /// Base64 text of `bytes`. The scratch buffer is wiped; the returned `String` cannot be (see
    /// `withEncoded` for text that must not outlive its use).
    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { raw in withEncoded(raw) { String(decoding: $0, as: UTF8.self) } }
    }

    /// Lets `body` read the base64 text of `bytes` (without a terminating NUL), then wipes it.
    public static func withEncoded<R>(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        _ = initialized
        let variant = sodium_base64_VARIANT_ORIGINAL
        let capacity = sodium_base64_encoded_len(bytes.count, variant)  // includes the NUL
        let text = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: capacity)
        defer {
            sodium_memzero(text.baseAddress, capacity)
            text.deallocate()
        }
        let empty: UInt8 = 0
        withUnsafePointer(to: empty) { nothing in
            text.withMemoryRebound(to: CChar.self) { chars in
                _ = sodium_bin2base64(chars.baseAddress!, capacity, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? nothing,
                                      bytes.count, variant)
            }
        }
        return try body(UnsafeBufferPointer(rebasing: text[..<(capacity - 1)]))
    }

    /// Decodes base64 text.
    public static func decode(_ text: String) throws(Failure) -> [UInt8] {
        var text = text
        // `withUTF8` rethrows untyped errors, so the typed error travels in a Result.
        return try text.withUTF8 { utf8 in
            Result { () throws(Failure) in try decode(UnsafeRawBufferPointer(utf8)) }
        }.get()
    }

    /// Decodes base64 given as UTF-8 bytes. On success the result holds exactly the decoded bytes; on
    /// failure nothing decoded is left in memory.
    public static func decode(_ text: UnsafeRawBufferPointer) throws(Failure) -> [UInt8] {
        let characters = characterCount(text)
        guard characters % 4 == 0 else {
            throw Failure(reason: "its length, \(characters) characters, is not a multiple of 4")
        }
        // The padding is at most the last two characters of a valid text, and always the last one of
        // a 32-byte key: comparing them leaks nothing about a key.
        var padding = 0
        while padding < text.count, text[text.count - 1 - padding] == UInt8(ascii: "=") { padding += 1 }
        guard padding <= 2 else { throw Failure(reason: "it ends in \(padding) '=' characters; at most 2 are allowed") }

        // The padding has been checked; libsodium decodes the rest as unpadded base64, stopping at the
        // first character that is not in the alphabet (an '=' included). But libsodium 1.0.18 (Debian
        // 12) reads the text as signed `char`, and its arithmetic then maps every byte from 0x80 up to
        // the sextet 63 ('/') instead of refusing it: non-ASCII text is refused here first, with an OR
        // over every byte, which does not depend on where such a byte is.
        let data = UnsafeRawBufferPointer(rebasing: text[..<(text.count - padding)])
        guard data.count > 0 else { return [] }
        var high: UInt8 = 0
        for byte in data { high |= byte }
        if high & 0x80 != 0 {
            let stop = data.firstIndex { $0 & 0x80 != 0 }!
            let invalid = firstInvalid(in: UnsafeRawBufferPointer(rebasing: data[..<stop])) ?? stop
            throw Failure(reason: describeCharacter(in: text, at: invalid))
        }
        var bytes = [UInt8](repeating: 0, count: data.count / 4 * 3 + 2)
        let (decoded, length, stop) = sodiumDecode(data, into: &bytes)
        guard decoded, stop == data.count else {
            Secrets.wipe(&bytes)
            if stop < data.count { throw Failure(reason: describeCharacter(in: text, at: stop)) }
            throw Failure(reason: "its last character carries stray bits, so it is not the canonical form of any key")
        }
        bytes.removeLast(bytes.count - length)
        return bytes
    }

    /// `sodium_base642bin` over unpadded ASCII `text` into `out` (at least 3/4 of its size, plus 2):
    /// whether it succeeded, the bytes it wrote, and the offset where it stopped reading.
    private static func sodiumDecode(_ text: UnsafeRawBufferPointer, into out: inout [UInt8]) -> (Bool, Int, Int) {
        _ = initialized
        var length = 0
        var end: UnsafePointer<CChar>? = nil
        let status = out.withUnsafeMutableBufferPointer { out in
            text.withMemoryRebound(to: CChar.self) { chars in
                sodium_base642bin(out.baseAddress!, out.count, chars.baseAddress!, chars.count, nil, &length, &end,
                                  sodium_base64_VARIANT_ORIGINAL_NO_PADDING)
            }
        }
        return (status == 0, length, end.map { UnsafeRawPointer($0) - text.baseAddress! } ?? 0)
    }

    /// The offset of the first character of ASCII `text` outside the alphabet, or nil; for messages
    /// about text already refused.
    private static func firstInvalid(in text: UnsafeRawBufferPointer) -> Int? {
        guard text.count > 0 else { return nil }
        var scratch = [UInt8](repeating: 0, count: text.count / 4 * 3 + 2)
        defer { Secrets.wipe(&scratch) }
        let (_, _, stop) = sodiumDecode(text, into: &scratch)
        return stop < text.count ? stop : nil
    }

    /// `sodium_init()` once: the codec needs no CPU dispatch, but libsodium asks for it before any use.
    private static let initialized: Bool = sodium_init() >= 0

    /// Characters as a person counts them: UTF-8 bytes that start a scalar, which for the ASCII text
    /// every key is equals the byte count.
    private static func characterCount(_ text: UnsafeRawBufferPointer) -> Int {
        var count = 0
        for byte in text where byte & 0xC0 != 0x80 { count += 1 }
        return count
    }

    /// "'!' at position 3 is not a base64 character" for the character starting at byte `offset`; runs
    /// only on text already refused.
    private static func describeCharacter(in text: UnsafeRawBufferPointer, at offset: Int) -> String {
        let position = characterCount(UnsafeRawBufferPointer(rebasing: text[..<offset])) + 1
        let lead = text[offset]
        let length = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
        let scalar = String(decoding: text[offset...].prefix(length), as: UTF8.self).unicodeScalars.first ?? "\u{FFFD}"
        if scalar == "=" { return "'=' at position \(position) is padding in the middle" }
        return "\(describe(scalar)) at position \(position) is not a base64 character"
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
