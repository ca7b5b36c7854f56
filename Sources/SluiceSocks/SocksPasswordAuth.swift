/// Username/password authentication, RFC 1929: the client's request and the server's status.
///
/// ```
/// request: VER 1 | ULEN | UNAME (1-255) | PLEN | PASSWD (1-255)
/// reply:   VER 1 | STATUS (0 success, anything else failure)
/// ```
public struct SocksPasswordRequest: Hashable, Sendable {
    /// The sub-negotiation's version: 1.
    public static let version: UInt8 = 1

    public var username: [UInt8]
    public var password: [UInt8]

    public init(username: [UInt8], password: [UInt8]) {
        self.username = username
        self.password = password
    }

    public func encoded() throws(SocksError) -> [UInt8] {
        guard !username.isEmpty, !password.isEmpty else { throw .emptyCredential }
        guard username.count <= 255 else { throw .tooLong(field: "username", length: username.count) }
        guard password.count <= 255 else { throw .tooLong(field: "password", length: password.count) }
        return [Self.version, UInt8(username.count)] + username + [UInt8(password.count)] + password
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SocksError) -> Decoded<SocksPasswordRequest>? {
        var r = ByteReader(bytes)
        guard let version = r.byte() else { return nil }
        guard version == Self.version else { throw .badVersion(version, expected: Self.version) }
        guard let ulen = r.byte() else { return nil }
        guard ulen > 0 else { throw .emptyCredential }
        guard let username = r.take(Int(ulen)), let plen = r.byte() else { return nil }
        guard plen > 0 else { throw .emptyCredential }
        guard let password = r.take(Int(plen)) else { return nil }
        return Decoded(value: SocksPasswordRequest(username: Array(username), password: Array(password)), length: r.offset)
    }
}

/// The server's verdict on a `SocksPasswordRequest`.
public struct SocksPasswordReply: Hashable, Sendable {
    /// STATUS: 0 is success; RFC 1929 says only that anything else is a failure.
    public var status: UInt8

    public init(status: UInt8) { self.status = status }

    public static let success = SocksPasswordReply(status: 0)
    public static let failure = SocksPasswordReply(status: 1)

    public var succeeded: Bool { status == 0 }
    public var encoded: [UInt8] { [SocksPasswordRequest.version, status] }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SocksError) -> Decoded<SocksPasswordReply>? {
        var r = ByteReader(bytes)
        guard let version = r.byte() else { return nil }
        guard version == SocksPasswordRequest.version else { throw .badVersion(version, expected: SocksPasswordRequest.version) }
        guard let status = r.byte() else { return nil }
        return Decoded(value: SocksPasswordReply(status: status), length: 2)
    }
}
