/// A checked view of an ICMP message (RFC 792) over bytes it does not own: the IPv4 payload.
///
/// Every ICMP message starts with the same 8 bytes — type, code, checksum and 4 bytes whose meaning
/// depends on the type — so `init(validating:)` checks only that they are there. The checksum covers
/// the whole message and no pseudo-header; it is checked only by `verifyChecksum()`.
///
/// The view is valid only while the memory it was made from is; it copies nothing.
public struct ICMPv4Message {
    /// The whole message, header and body.
    public let bytes: UnsafeRawBufferPointer

    /// Type, code, checksum and the 4 type-specific bytes.
    public static let headerLength = 8

    /// Checks that `buffer` holds the 8-byte header.
    public init(validating buffer: UnsafeRawBufferPointer) throws(WireError) {
        guard buffer.count >= ICMPv4Message.headerLength else { throw .truncated(.icmp) }
        bytes = buffer
    }

    public var type: UInt8 { bytes[0] }
    public var code: UInt8 { bytes[1] }
    public var checksum: UInt16 { bytes.readU16(at: 2) }
    /// Bytes 4–7 as one value: identifier and sequence number of an echo, the next-hop MTU (low
    /// half) of "fragmentation needed", zero for most others.
    public var rest: UInt32 { bytes.readU32(at: 4) }
    /// An echo's identifier.
    public var identifier: UInt16 { bytes.readU16(at: 4) }
    /// An echo's sequence number.
    public var sequenceNumber: UInt16 { bytes.readU16(at: 6) }
    /// The next-hop MTU of "fragmentation needed" (RFC 1191); 0 from routers older than it.
    public var nextHopMTU: UInt16 { bytes.readU16(at: 6) }
    public var isEchoRequest: Bool { type == ICMPv4Type.echoRequest && code == 0 }
    public var isError: Bool { ICMPv4Type.isError(type) }
    /// Everything after the header: an echo's data, or an error's quote of the offending packet.
    public var body: UnsafeRawBufferPointer { bytes.slice(ICMPv4Message.headerLength..<bytes.count) }

    /// Whether the checksum verifies.
    public func verifyChecksum() -> Bool { Checksum.verify(bytes) }
}
