import SluiceBase64

/// The text form of a Curve25519 key or pre-shared key: base64 of 32 bytes, 44 characters, as
/// `wg genkey` prints. Decoding tolerates surrounding whitespace (a trailing newline from `echo` or an
/// editor) and nothing else.
///
/// Secrets at rest: a private key or PSK file that group or others may access is refused before its
/// bytes are read, as ssh refuses such a key. The bytes of a key file (or of standard input) are read
/// into one buffer of fixed size and wiped after decoding; the decoded key is the only copy that
/// leaves, as the `[UInt8]` the configuration holds (see `Secrets` for what Swift arrays allow).
public enum KeyText {
    /// Bytes in every key this tool handles.
    public static let keyLength = 32

    /// Whether every key given is `keyLength` bytes; nil is a key left unset (no PSK). For the
    /// configurations' preconditions.
    static func allHaveKeyLength(_ keys: [[UInt8]?]) -> Bool {
        keys.allSatisfy { ($0?.count ?? keyLength) == keyLength }
    }

    /// Largest key file read; a key file is 45 bytes or so, anything far bigger is the wrong file.
    static let fileLimit = 4096

    /// Base64 text of `key`.
    public static func encode(_ key: [UInt8]) -> String {
        Base64.encode(key)
    }

    /// Decodes key text to 32 bytes. `source` names where the text came from in the error
    /// ("--relay-public-key", "standard input", "private key file client.key").
    public static func decode(_ text: String, source: String) throws(ConfigError) -> [UInt8] {
        var text = text
        // `withUTF8` rethrows untyped errors, so the typed error travels in a Result.
        return try text.withUTF8 { utf8 in
            Result { () throws(ConfigError) in try decode(UnsafeRawBufferPointer(utf8), source: source) }
        }.get()
    }

    /// Decodes key text given as UTF-8 bytes; leaves no decoded bytes behind when it throws.
    static func decode(_ text: UnsafeRawBufferPointer, source: String) throws(ConfigError) -> [UInt8] {
        let trimmed = trimmingWhitespace(text)
        guard !trimmed.isEmpty else { throw .invalidKey(source: source, problem: .empty) }
        var bytes: [UInt8]
        do {
            bytes = try Base64.decode(trimmed)
        } catch {
            throw .invalidKey(source: source, problem: .notBase64(error.reason))
        }
        guard bytes.count == keyLength else {
            let count = bytes.count
            Secrets.wipe(&bytes)
            throw .invalidKey(source: source, problem: .wrongLength(count))
        }
        return bytes
    }

    /// Reads and decodes a private key or PSK file. `what` names the file's role in errors:
    /// "private key file", "pre-shared key file". A regular file with any permission bit for group
    /// or others is refused (`keyFileExposed`) before it is read.
    public static func read(file path: String, what: String) throws(ConfigError) -> [UInt8] {
        let file: SmallFile.Open
        do {
            file = try SmallFile.Open(path: path)
        } catch {
            throw .keyFileUnreadable(what: what, path: path, reason: error.reason)
        }
        if file.isRegular, file.permissions & 0o077 != 0 {
            throw .keyFileExposed(what: what, path: path, permissions: file.permissions)
        }
        return try read(file, source: "\(what) \(path)", unreadable: { .keyFileUnreadable(what: what, path: path, reason: $0) })
    }

    /// Reads and decodes a key from standard input (`sluice pubkey`).
    public static func readStandardInput() throws(ConfigError) -> [UInt8] {
        let source = "standard input"
        let unreadable = { (reason: String) in ConfigError.keyFileUnreadable(what: "key on", path: source, reason: reason) }
        let file: SmallFile.Open
        do {
            file = try SmallFile.Open(borrowing: 0)
        } catch {
            throw unreadable(error.reason)
        }
        return try read(file, source: source, unreadable: unreadable)
    }

    /// Reads `file` into one buffer, decodes it and wipes the buffer.
    private static func read(_ file: borrowing SmallFile.Open, source: String,
                             unreadable: (String) -> ConfigError) throws(ConfigError) -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: fileLimit + 1, alignment: 1)
        defer {
            Secrets.wipe(buffer)
            buffer.deallocate()
        }
        let count: Int
        do {
            count = try file.readAll(into: buffer)
        } catch {
            throw unreadable(error.reason)
        }
        return try decode(UnsafeRawBufferPointer(rebasing: buffer[..<count]), source: source)
    }

    /// `text` without leading and trailing whitespace (Unicode's White_Space, as `wg` trims only
    /// ASCII but an editor may add a no-break space). Looks only at the scalars at the two ends.
    private static func trimmingWhitespace(_ text: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var start = 0, end = text.count
        while start < end, let length = whitespaceLength(text, at: start) { start += length }
        while end > start {
            var lead = end - 1
            while lead > start, text[lead] & 0xC0 == 0x80, end - lead < 4 { lead -= 1 }
            guard let length = whitespaceLength(text, at: lead), lead + length == end else { break }
            end = lead
        }
        return UnsafeRawBufferPointer(rebasing: text[start..<end])
    }

    /// The UTF-8 length of the scalar at `offset` when it is whitespace, else nil.
    private static func whitespaceLength(_ text: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        let lead = text[offset]
        let length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
        guard offset + length <= text.count else { return nil }
        var iterator = text[offset..<(offset + length)].makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        guard case .valid(let encoded) = parser.parseScalar(from: &iterator), encoded.count == length,
              Unicode.UTF8.decode(encoded).properties.isWhitespace else { return nil }
        return length
    }
}
