/// A checked view of a UDP datagram (RFC 768) over bytes it does not own: the IP payload.
///
/// `init(validating:)` checks the length field against the buffer once; bytes past the length field
/// are not part of the datagram. The checksum needs the IP pseudo-header and is checked only by
/// `verifyChecksum`.
///
/// The view is valid only while the memory it was made from is; it copies nothing.
public struct UDPDatagram {
    /// The datagram, header and payload: the buffer cut to the length field.
    public let bytes: UnsafeRawBufferPointer

    public static let headerLength = 8

    /// Checks that `buffer` holds a UDP header whose length field fits it.
    public init(validating buffer: UnsafeRawBufferPointer) throws(WireError) {
        guard buffer.count >= UDPDatagram.headerLength else { throw .truncated(.udp) }
        let length = Int(buffer.readU16(at: 4))
        guard length >= UDPDatagram.headerLength, length <= buffer.count else {
            throw .badTotalLength(.udp, length)
        }
        bytes = buffer.slice(0..<length)
    }

    public var sourcePort: UInt16 { bytes.readU16(at: 0) }
    public var destinationPort: UInt16 { bytes.readU16(at: 2) }
    /// The length field: header plus payload.
    public var length: Int { Int(bytes.readU16(at: 4)) }
    /// Zero means "no checksum", allowed over IPv4 only.
    public var checksum: UInt16 { bytes.readU16(at: 6) }
    public var payloadRange: Range<Int> { UDPDatagram.headerLength..<bytes.count }
    public var payload: UnsafeRawBufferPointer { bytes.slice(payloadRange) }

    /// Whether the checksum verifies for a datagram sent from `source` to `destination`.
    ///
    /// Over IPv4 a zero checksum means the sender computed none, and is accepted (RFC 768); over IPv6
    /// the checksum is mandatory and zero is rejected (RFC 8200 §8.1).
    public func verifyChecksum(source: IPAddress, destination: IPAddress) -> Bool {
        if checksum == 0 { return source.isIPv4 }
        let pseudo = Checksum.pseudoHeaderSum(
            source: source, destination: destination, protocol: .udp, length: bytes.count)
        return Checksum.verify(bytes, pseudoHeaderSum: pseudo)
    }
}
