/// A username and password for RFC 1929, each 1 to 255 bytes. `description` never shows the password.
public struct SocksCredentials: Hashable, Sendable, CustomStringConvertible {
    public let username: [UInt8]
    public let password: [UInt8]

    /// nil unless both are 1 to 255 bytes.
    public init?(username: [UInt8], password: [UInt8]) {
        guard (1...255).contains(username.count), (1...255).contains(password.count) else { return nil }
        self.username = username
        self.password = password
    }

    public var description: String { "user \(String(decoding: username, as: UTF8.self))" }
}
