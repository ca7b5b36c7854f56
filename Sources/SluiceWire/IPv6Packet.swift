/// A checked view of an IPv6 packet (RFC 8200) over bytes it does not own.
///
/// `init(validating:)` checks the version and payload length, then walks the extension headers
/// (hop-by-hop, routing, destination options, fragment) to the transport header, checking each
/// header's length against the packet. It stops at the first header of any other type, or after a
/// fragment header of a non-first fragment (what follows is not a header). Jumbograms (RFC 2675)
/// are not supported: a payload length of 0 means an empty payload.
///
/// The view is valid only while the memory it was made from is; it copies nothing.
public struct IPv6Packet {
    /// The packet: the buffer passed in, cut to 40 bytes plus the payload length.
    public let bytes: UnsafeRawBufferPointer
    /// The header after the last extension header: the transport protocol, or for a non-first
    /// fragment the first header of the fragmentable part.
    public let transportProtocol: IPProtocol
    /// Where the transport header (or a non-first fragment's data) starts in `bytes`.
    public let transportOffset: Int
    /// The fragment header, if the packet has one.
    public let fragment: Fragment?
    /// Where the fragment header starts in `bytes`, if there is one: the length of the part before
    /// it (the fixed header and any hop-by-hop, destination options and routing headers).
    public let fragmentHeaderOffset: Int?
    /// Where the Next Header field that names the fragment header is (6 when it follows the fixed
    /// header); meaningful only if `fragmentHeaderOffset` is not nil.
    let fragmentLinkOffset: Int

    /// An IPv6 fragment header's fields.
    public struct Fragment: Hashable, Sendable {
        /// Offset of this fragment's data in bytes (the field counts 8-byte units).
        public var offset: Int
        /// M: more fragments follow.
        public var moreFragments: Bool
        public var identification: UInt32

        /// An atomic fragment (RFC 6946, offset 0 and no more fragments) is a whole packet.
        public var isAtomic: Bool { offset == 0 && !moreFragments }
    }

    /// The fixed header's length.
    public static let headerLength = 40

    /// Checks the fixed header and walks the extension headers.
    public init(validating buffer: UnsafeRawBufferPointer) throws(WireError) {
        guard buffer.count >= IPv6Packet.headerLength else { throw .truncated(.ipv6) }
        let version = buffer[0] >> 4
        guard version == 6 else { throw .badVersion(version) }
        let total = IPv6Packet.headerLength + Int(buffer.readU16(at: 4))
        guard total <= buffer.count else { throw .badTotalLength(.ipv6, total) }
        let bytes = buffer.slice(0..<total)

        var next = IPProtocol(rawValue: bytes[6])
        var offset = IPv6Packet.headerLength
        var fragment: Fragment? = nil
        var fragmentHeaderOffset: Int? = nil
        var link = 6  // the Next Header field that named the header at `offset`
        var fragmentLink = 6
        // Each turn moves `offset` on by at least 8 and never past `total`, so the walk ends.
        walk: while true {
            switch next {
            case .hopByHop, .routing, .destinationOptions:
                if next == .hopByHop && offset != IPv6Packet.headerLength { throw .badExtensionHeader(next) }
                guard total - offset >= 8 else { throw .truncated(.ipv6ExtensionHeader) }
                let length = (Int(bytes[offset + 1]) + 1) * 8
                guard total - offset >= length else { throw .truncated(.ipv6ExtensionHeader) }
                next = IPProtocol(rawValue: bytes[offset])
                link = offset
                offset += length
            case .fragment:
                guard fragment == nil else { throw .badExtensionHeader(next) }
                guard total - offset >= 8 else { throw .truncated(.ipv6ExtensionHeader) }
                let field = bytes.readU16(at: offset + 2)
                let header = Fragment(
                    offset: Int(field & 0xFFF8), moreFragments: field & 1 != 0,
                    identification: bytes.readU32(at: offset + 4))
                fragment = header
                fragmentHeaderOffset = offset
                fragmentLink = link
                next = IPProtocol(rawValue: bytes[offset])
                link = offset
                offset += 8
                if header.offset != 0 { break walk }
            default:
                break walk
            }
        }
        self.bytes = bytes
        self.transportProtocol = next
        self.transportOffset = offset
        self.fragment = fragment
        self.fragmentHeaderOffset = fragmentHeaderOffset
        self.fragmentLinkOffset = fragmentLink
    }

    public var version: UInt8 { bytes[0] >> 4 }
    /// DSCP and ECN.
    public var trafficClass: UInt8 { UInt8(truncatingIfNeeded: bytes.readU16(at: 0) >> 4) }
    public var flowLabel: UInt32 { bytes.readU32(at: 0) & 0x000F_FFFF }
    public var payloadLength: Int { Int(bytes.readU16(at: 4)) }
    /// The fixed header's next-header field: the first extension header or the transport protocol.
    public var nextHeader: IPProtocol { IPProtocol(rawValue: bytes[6]) }
    public var hopLimit: UInt8 { bytes[7] }
    public var source: IPAddress { IPAddress(v6In: bytes, at: 8) }
    public var destination: IPAddress { IPAddress(v6In: bytes, at: 24) }
    /// Everything after the fixed header, extension headers included.
    public var payloadRange: Range<Int> { IPv6Packet.headerLength..<bytes.count }
    /// The transport segment (after all extension headers).
    public var transportRange: Range<Int> { transportOffset..<bytes.count }
    public var transport: UnsafeRawBufferPointer { bytes.slice(transportRange) }
    /// True if the packet is a piece of a larger one (a fragment header that is not atomic).
    public var isFragment: Bool { fragment.map { !$0.isAtomic } ?? false }

    /// The sum of the TCP/UDP pseudo-header for the transport segment. RFC 8200 §8.1: the
    /// upper-layer length excludes the extension headers.
    public var pseudoHeaderSum: UInt16 {
        Checksum.pseudoHeaderSum(
            source: source, destination: destination, protocol: transportProtocol, length: transportRange.count)
    }
}
