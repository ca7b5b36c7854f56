/// A checked view of an ICMP message (RFC 792) over bytes it does not own: the IPv4 payload.
///
/// Every ICMP message starts with the same 8 bytes (`ICMPMessageView`), so `init(validating:)`
/// checks only that they are there. The checksum covers the whole message and no pseudo-header; it
/// is checked only by `verifyChecksum()`.
///
/// The view is valid only while the memory it was made from is; it copies nothing.
public struct ICMPv4Message: ICMPMessageView {
    /// The whole message, header and body.
    public let bytes: UnsafeRawBufferPointer

    /// Checks that `buffer` holds the 8-byte header.
    public init(validating buffer: UnsafeRawBufferPointer) throws(WireError) {
        guard buffer.count >= ICMPHeader.length else { throw .truncated(.icmp) }
        bytes = buffer
    }

    public static var echoRequestType: UInt8 { ICMPv4Type.echoRequest }
    public static func isErrorType(_ type: UInt8) -> Bool { ICMPv4Type.isError(type) }

    /// The next-hop MTU of "fragmentation needed" (RFC 1191); 0 from routers older than it.
    public var nextHopMTU: UInt16 { bytes.readU16(at: 6) }

    /// Whether the checksum verifies.
    public func verifyChecksum() -> Bool { Checksum.verify(bytes) }
}
