/// What can be wrong with SOCKS5 bytes (RFC 1928, RFC 1929). Truncation is not an error: a decoder
/// that needs more bytes returns nil, and the caller reads more. Every case is a peer that does not
/// speak SOCKS5, or speaks it wrongly; the connection cannot continue.
public enum SocksError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The first byte is not 5 (SOCKS5), or an RFC 1929 message's is not 1.
    case badVersion(UInt8, expected: UInt8)
    /// A greeting that lists no method at all (NMETHODS 0).
    case noMethods
    /// A request or UDP header's reserved bytes are not zero.
    case badReserved
    /// ATYP other than 1 (IPv4), 3 (domain) or 4 (IPv6).
    case badAddressType(UInt8)
    /// A domain of length 0.
    case emptyDomain
    /// A request's command other than CONNECT, BIND and UDP ASSOCIATE.
    case badCommand(UInt8)
    /// An RFC 1929 username or password of length 0.
    case emptyCredential
    /// A field longer than its one-byte length can say (encoding only): a domain, username or
    /// password over 255 bytes.
    case tooLong(field: String, length: Int)
    /// The server chose a method the client did not offer.
    case unofferedMethod(UInt8)

    public var description: String {
        switch self {
        case .badVersion(let v, let expected): return "version \(v), expected \(expected)"
        case .noMethods: return "a greeting offering no authentication method"
        case .badReserved: return "reserved bytes that are not zero"
        case .badAddressType(let t): return "address type \(t) (1 IPv4, 3 domain, 4 IPv6)"
        case .emptyDomain: return "an empty domain name"
        case .badCommand(let c): return "command \(c) (1 CONNECT, 2 BIND, 3 UDP ASSOCIATE)"
        case .emptyCredential: return "an empty username or password"
        case .tooLong(let field, let length): return "a \(field) of \(length) bytes (at most 255)"
        case .unofferedMethod(let m): return "the server chose method \(m), which was not offered"
        }
    }
}

/// A decoded message and how many bytes of the input it took.
public struct Decoded<Value> {
    public let value: Value
    public let length: Int
}

/// A bounds-checked reader over received bytes: every `take` returns nil when the bytes run out, so a
/// decoder says "need more" instead of reading past the end.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func take(_ n: Int) -> UnsafeRawBufferPointer? {
        guard n >= 0, bytes.count - offset >= n else { return nil }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + n])
    }

    mutating func uint16() -> UInt16? {
        guard let two = take(2) else { return nil }
        return UInt16(two[0]) << 8 | UInt16(two[1])
    }
}
