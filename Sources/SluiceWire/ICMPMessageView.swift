/// What ICMP (RFC 792) and ICMPv6 (RFC 4443) messages share, read from the bytes of a checked view:
/// the first 8 bytes are type, code, checksum and 4 bytes whose meaning depends on the type. The
/// two views differ in their type numbers, their errors' extra fields and their checksum (ICMPv6's
/// covers the IPv6 pseudo-header), which each keeps to itself.
public protocol ICMPMessageView {
    /// The whole message, header and body, at least `ICMPHeader.length` bytes.
    var bytes: UnsafeRawBufferPointer { get }
    /// The echo request's type number in this family.
    static var echoRequestType: UInt8 { get }
    /// Whether `type` is an error message in this family, which no ICMP error may answer.
    static func isErrorType(_ type: UInt8) -> Bool
}

extension ICMPMessageView {
    public var type: UInt8 { bytes[0] }
    public var code: UInt8 { bytes[1] }
    public var checksum: UInt16 { bytes.readU16(at: 2) }
    /// Bytes 4–7 as one value: identifier and sequence number of an echo, the MTU of a "too big"
    /// (IPv4: the next-hop MTU in the low half), zero for most others.
    public var rest: UInt32 { bytes.readU32(at: 4) }
    /// An echo's identifier.
    public var identifier: UInt16 { bytes.readU16(at: 4) }
    /// An echo's sequence number.
    public var sequenceNumber: UInt16 { bytes.readU16(at: 6) }
    public var isEchoRequest: Bool { type == Self.echoRequestType && code == 0 }
    public var isError: Bool { Self.isErrorType(type) }
    /// Everything after the header: an echo's data, or an error's quote of the offending packet.
    public var body: UnsafeRawBufferPointer { bytes.slice(ICMPHeader.length..<bytes.count) }
}
