import SluiceBase64

/// The text form of a Curve25519 key or pre-shared key: base64 of 32 bytes, 44 characters, as
/// `wg genkey` prints. Decoding tolerates surrounding whitespace (a trailing newline from `echo` or an
/// editor) and nothing else.
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

    /// A key read from a file, with what the file's mode says about who else can read it.
    public struct FileKey: Sendable, Equatable {
        /// The 32 key bytes.
        public let key: [UInt8]
        /// The path as given (or as resolved against a config file's directory).
        public let path: String
        /// Permission bits of the file (`st_mode & 0o7777`).
        public let permissions: UInt32
        /// True when a regular file grants any access to group or others (`permissions & 0o077`).
        /// The caller decides whether to warn; `wg` does for private keys.
        public let isExposed: Bool
    }

    /// Base64 text of `key`.
    public static func encode(_ key: [UInt8]) -> String {
        Base64.encode(key)
    }

    /// Decodes key text to 32 bytes. `source` names where the text came from in the error
    /// ("--relay-public-key", "standard input", "private key file client.key").
    public static func decode(_ text: String, source: String) throws(ConfigError) -> [UInt8] {
        let trimmed = trimmingWhitespace(text)
        guard !trimmed.isEmpty else { throw .invalidKey(source: source, problem: .empty) }
        let bytes: [UInt8]
        do {
            bytes = try Base64.decode(trimmed)
        } catch {
            throw .invalidKey(source: source, problem: .notBase64(error.reason))
        }
        guard bytes.count == keyLength else { throw .invalidKey(source: source, problem: .wrongLength(bytes.count)) }
        return bytes
    }

    /// Reads and decodes a key file. `what` names the file's role in errors and warnings:
    /// "private key file", "pre-shared key file".
    public static func read(file path: String, what: String) throws(ConfigError) -> FileKey {
        let contents: SmallFile.Contents
        do {
            contents = try SmallFile.read(path, limit: fileLimit)
        } catch {
            throw .keyFileUnreadable(what: what, path: path, reason: error.reason)
        }
        let text = String(decoding: contents.bytes, as: UTF8.self)
        let key = try decode(text, source: "\(what) \(path)")
        return FileKey(key: key, path: path, permissions: contents.permissions,
                       isExposed: contents.isRegular && contents.permissions & 0o077 != 0)
    }

    private static func trimmingWhitespace(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
