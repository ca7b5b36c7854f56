/// A checked view of an IPv4 packet (RFC 791) over bytes it does not own.
///
/// `init(validating:)` checks the version and every length once; after that each accessor reads its
/// field without further checks, and no accessor can run past the buffer. The header checksum is not
/// checked on construction: call `verifyChecksum()` when the packet's source calls for it.
///
/// The view is valid only while the memory it was made from is; it copies nothing.
public struct IPv4Packet {
    /// The packet: the buffer passed in, cut to the header's total length (link-layer padding and
    /// any other trailing bytes are not part of it).
    public let bytes: UnsafeRawBufferPointer

    /// The fixed header's length; the minimum IHL is 5 words.
    public static let minimumHeaderLength = 20

    /// Checks that `buffer` starts with an IPv4 header whose header length and total length fit.
    public init(validating buffer: UnsafeRawBufferPointer) throws(WireError) {
        guard buffer.count >= IPv4Packet.minimumHeaderLength else { throw .truncated(.ipv4) }
        let versionAndIHL = buffer[0]
        guard versionAndIHL >> 4 == 4 else { throw .badVersion(versionAndIHL >> 4) }
        let headerLength = Int(versionAndIHL & 0x0F) * 4
        guard headerLength >= IPv4Packet.minimumHeaderLength else { throw .badHeaderLength(.ipv4, headerLength) }
        guard headerLength <= buffer.count else { throw .truncated(.ipv4) }
        let totalLength = Int(buffer.readU16(at: 2))
        guard totalLength >= headerLength, totalLength <= buffer.count else {
            throw .badTotalLength(.ipv4, totalLength)
        }
        bytes = buffer.slice(0..<totalLength)
    }

    public var version: UInt8 { bytes[0] >> 4 }
    /// Header length in bytes, options included (20...60).
    public var headerLength: Int { Int(bytes[0] & 0x0F) * 4 }
    /// The type-of-service byte: DSCP (high 6 bits) and ECN (low 2 bits).
    public var typeOfService: UInt8 { bytes[1] }
    public var totalLength: Int { Int(bytes.readU16(at: 2)) }
    public var identification: UInt16 { bytes.readU16(at: 4) }
    /// DF: the packet may not be fragmented.
    public var dontFragment: Bool { bytes[6] & 0x40 != 0 }
    /// MF: more fragments follow this one.
    public var moreFragments: Bool { bytes[6] & 0x20 != 0 }
    /// The fragment offset in bytes (the field counts 8-byte units).
    public var fragmentOffset: Int { Int(bytes.readU16(at: 6) & 0x1FFF) * 8 }
    /// True for any piece of a fragmented packet, first one included.
    public var isFragment: Bool { moreFragments || fragmentOffset != 0 }
    public var timeToLive: UInt8 { bytes[8] }
    public var `protocol`: IPProtocol { IPProtocol(rawValue: bytes[9]) }
    public var headerChecksum: UInt16 { bytes.readU16(at: 10) }
    public var source: IPAddress { IPAddress(v4In: bytes, at: 12) }
    public var destination: IPAddress { IPAddress(v4In: bytes, at: 16) }
    /// The options, if any, between the fixed header and the payload.
    public var optionsRange: Range<Int> { IPv4Packet.minimumHeaderLength..<headerLength }
    /// Where the payload lies in `bytes`.
    public var payloadRange: Range<Int> { headerLength..<bytes.count }
    /// The payload (the transport segment, or a fragment of it).
    public var payload: UnsafeRawBufferPointer { bytes.slice(payloadRange) }

    /// Whether the header checksum verifies.
    public func verifyChecksum() -> Bool {
        Checksum.verify(bytes.slice(0..<headerLength))
    }

    /// The sum of the TCP/UDP pseudo-header for this packet's payload.
    public var pseudoHeaderSum: UInt16 {
        Checksum.pseudoHeaderSum(
            source: source, destination: destination, protocol: self.protocol, length: payloadRange.count)
    }
}
