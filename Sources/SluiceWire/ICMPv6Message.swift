/// A checked view of an ICMPv6 message (RFC 4443) over bytes it does not own: the IPv6 payload after
/// the extension headers.
///
/// The layout of the first 8 bytes is ICMP's — type, code, checksum, 4 type-specific bytes — but the
/// checksum also covers the IPv6 pseudo-header (RFC 4443 §2.3), so `verifyChecksum` needs the
/// addresses.
///
/// The view is valid only while the memory it was made from is; it copies nothing.
public struct ICMPv6Message {
    /// The whole message, header and body.
    public let bytes: UnsafeRawBufferPointer

    /// Type, code, checksum and the 4 type-specific bytes.
    public static let headerLength = 8

    /// Checks that `buffer` holds the 8-byte header.
    public init(validating buffer: UnsafeRawBufferPointer) throws(WireError) {
        guard buffer.count >= ICMPv6Message.headerLength else { throw .truncated(.icmpv6) }
        bytes = buffer
    }

    public var type: UInt8 { bytes[0] }
    public var code: UInt8 { bytes[1] }
    public var checksum: UInt16 { bytes.readU16(at: 2) }
    /// Bytes 4–7 as one value: identifier and sequence number of an echo, the MTU of Packet Too Big,
    /// the pointer of Parameter Problem, zero for the others.
    public var rest: UInt32 { bytes.readU32(at: 4) }
    /// An echo's identifier.
    public var identifier: UInt16 { bytes.readU16(at: 4) }
    /// An echo's sequence number.
    public var sequenceNumber: UInt16 { bytes.readU16(at: 6) }
    /// Packet Too Big's MTU.
    public var mtu: UInt32 { bytes.readU32(at: 4) }
    public var isEchoRequest: Bool { type == ICMPv6Type.echoRequest && code == 0 }
    public var isError: Bool { ICMPv6Type.isError(type) }
    /// Everything after the header: an echo's data, or an error's quote of the offending packet.
    public var body: UnsafeRawBufferPointer { bytes.slice(ICMPv6Message.headerLength..<bytes.count) }

    /// Whether the checksum verifies for a message sent from `source` to `destination` (IPv6).
    public func verifyChecksum(source: IPAddress, destination: IPAddress) -> Bool {
        Checksum.verify(bytes, pseudoHeaderSum: ICMPHeader.pseudoHeaderSum(source: source, destination: destination, length: bytes.count))
    }
}
