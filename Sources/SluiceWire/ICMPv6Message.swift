/// A checked view of an ICMPv6 message (RFC 4443) over bytes it does not own: the IPv6 payload after
/// the extension headers.
///
/// The layout of the first 8 bytes is ICMP's (`ICMPMessageView`), but the checksum also covers the
/// IPv6 pseudo-header (RFC 4443 §2.3), so `verifyChecksum` needs the addresses.
///
/// The view is valid only while the memory it was made from is; it copies nothing.
public struct ICMPv6Message: ICMPMessageView {
    /// The whole message, header and body.
    public let bytes: UnsafeRawBufferPointer

    /// Checks that `buffer` holds the 8-byte header.
    public init(validating buffer: UnsafeRawBufferPointer) throws(WireError) {
        guard buffer.count >= ICMPHeader.length else { throw .truncated(.icmpv6) }
        bytes = buffer
    }

    public static var echoRequestType: UInt8 { ICMPv6Type.echoRequest }
    public static func isErrorType(_ type: UInt8) -> Bool { ICMPv6Type.isError(type) }

    /// Packet Too Big's MTU.
    public var mtu: UInt32 { bytes.readU32(at: 4) }

    /// Whether the checksum verifies for a message sent from `source` to `destination` (IPv6).
    public func verifyChecksum(source: IPAddress, destination: IPAddress) -> Bool {
        Checksum.verify(bytes, pseudoHeaderSum: ICMPHeader.pseudoHeaderSum(source: source, destination: destination, length: bytes.count))
    }
}
