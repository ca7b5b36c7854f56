/// The authentication methods of RFC 1928 §3 that Sluice speaks; others are kept as their number.
public enum SocksMethod {
    /// X'00' NO AUTHENTICATION REQUIRED.
    public static let noAuthentication: UInt8 = 0x00
    /// X'02' USERNAME/PASSWORD (RFC 1929).
    public static let usernamePassword: UInt8 = 0x02
    /// X'FF' NO ACCEPTABLE METHODS: the server's answer when it takes none of those offered.
    public static let noAcceptable: UInt8 = 0xFF
}

/// The client's first message (RFC 1928 §3): VER 5, NMETHODS, METHODS.
///
/// ```
/// +-----+----------+----------+
/// | VER | NMETHODS | METHODS  |
/// |  1  |    1     | 1 to 255 |
/// +-----+----------+----------+
/// ```
public struct SocksGreeting: Hashable, Sendable {
    public static let version: UInt8 = 5

    /// The methods offered, 1 to 255 of them.
    public var methods: [UInt8]

    public init(methods: [UInt8]) { self.methods = methods }

    public func encoded() throws(SocksError) -> [UInt8] {
        guard !methods.isEmpty else { throw .noMethods }
        guard methods.count <= 255 else { throw .tooLong(field: "method list", length: methods.count) }
        return [Self.version, UInt8(methods.count)] + methods
    }

    /// nil until the whole greeting has arrived.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SocksError) -> Decoded<SocksGreeting>? {
        var r = ByteReader(bytes)
        guard let version = r.byte() else { return nil }
        guard version == Self.version else { throw .badVersion(version, expected: Self.version) }
        guard let count = r.byte() else { return nil }
        guard count > 0 else { throw .noMethods }
        guard let methods = r.take(Int(count)) else { return nil }
        return Decoded(value: SocksGreeting(methods: Array(methods)), length: r.offset)
    }
}

/// The server's answer to the greeting (RFC 1928 §3): VER 5, METHOD.
public struct SocksMethodSelection: Hashable, Sendable {
    public var method: UInt8

    public init(method: UInt8) { self.method = method }

    public var encoded: [UInt8] { [SocksGreeting.version, method] }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SocksError) -> Decoded<SocksMethodSelection>? {
        var r = ByteReader(bytes)
        guard let version = r.byte() else { return nil }
        guard version == SocksGreeting.version else { throw .badVersion(version, expected: SocksGreeting.version) }
        guard let method = r.byte() else { return nil }
        return Decoded(value: SocksMethodSelection(method: method), length: 2)
    }
}
