/// A reply's REP field (RFC 1928 §6). Values 9 to 255 are unassigned; a client treats any value
/// but `succeeded` as a failure, so they are kept as numbers rather than refused.
public struct SocksReplyCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let succeeded = SocksReplyCode(rawValue: 0)
    public static let generalFailure = SocksReplyCode(rawValue: 1)
    public static let notAllowed = SocksReplyCode(rawValue: 2)
    public static let networkUnreachable = SocksReplyCode(rawValue: 3)
    public static let hostUnreachable = SocksReplyCode(rawValue: 4)
    public static let connectionRefused = SocksReplyCode(rawValue: 5)
    public static let ttlExpired = SocksReplyCode(rawValue: 6)
    public static let commandNotSupported = SocksReplyCode(rawValue: 7)
    public static let addressTypeNotSupported = SocksReplyCode(rawValue: 8)

    /// RFC 1928's words for it.
    public var description: String {
        switch rawValue {
        case 0: return "succeeded"
        case 1: return "general SOCKS server failure"
        case 2: return "connection not allowed by ruleset"
        case 3: return "network unreachable"
        case 4: return "host unreachable"
        case 5: return "connection refused"
        case 6: return "TTL expired"
        case 7: return "command not supported"
        case 8: return "address type not supported"
        default: return "unassigned reply code \(rawValue)"
        }
    }
}

/// The server's reply to a request (RFC 1928 §6): the outcome and, on success, the bound address —
/// for CONNECT the server's end of its connection, for UDP ASSOCIATE where to send datagrams.
///
/// ```
/// +-----+-----+-------+------+----------+----------+
/// | VER | REP |  RSV  | ATYP | BND.ADDR | BND.PORT |
/// +-----+-----+-------+------+----------+----------+
/// ```
/// The reserved byte is not checked on decode: some servers have sent garbage there, and nothing
/// depends on it.
public struct SocksReply: Hashable, Sendable {
    public var code: SocksReplyCode
    public var bound: SocksAddress

    public init(code: SocksReplyCode, bound: SocksAddress = .unspecifiedIPv4) {
        self.code = code
        self.bound = bound
    }

    public func encoded() throws(SocksError) -> [UInt8] {
        var out: [UInt8] = [SocksGreeting.version, code.rawValue, 0]
        try bound.encode(into: &out)
        return out
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SocksError) -> Decoded<SocksReply>? {
        var r = ByteReader(bytes)
        guard let version = r.byte() else { return nil }
        guard version == SocksGreeting.version else { throw .badVersion(version, expected: SocksGreeting.version) }
        guard let code = r.byte(), r.byte() != nil else { return nil }
        guard let bound = try SocksAddress.decode(&r) else { return nil }
        return Decoded(value: SocksReply(code: SocksReplyCode(rawValue: code), bound: bound), length: r.offset)
    }
}
