/// The fields of an IPv4 header as plain values: parse one out of an `IPv4Packet`, or fill one in and
/// `emit` it. Emitted headers carry no options (20 bytes).
public struct IPv4Header: Hashable, Sendable {
    /// Must be an IPv4 address.
    public var source: IPAddress
    /// Must be an IPv4 address.
    public var destination: IPAddress
    public var `protocol`: IPProtocol
    /// Bytes after the header; the total length is `length + payloadLength`.
    public var payloadLength: Int
    public var timeToLive: UInt8
    /// DSCP and ECN.
    public var typeOfService: UInt8
    public var identification: UInt16
    public var dontFragment: Bool
    public var moreFragments: Bool
    /// In bytes; a multiple of 8.
    public var fragmentOffset: Int

    /// The emitted header's length.
    public static let length = 20

    public init(
        source: IPAddress, destination: IPAddress, protocol proto: IPProtocol, payloadLength: Int,
        timeToLive: UInt8 = 64, typeOfService: UInt8 = 0, identification: UInt16 = 0,
        dontFragment: Bool = true, moreFragments: Bool = false, fragmentOffset: Int = 0
    ) {
        self.source = source
        self.destination = destination
        self.protocol = proto
        self.payloadLength = payloadLength
        self.timeToLive = timeToLive
        self.typeOfService = typeOfService
        self.identification = identification
        self.dontFragment = dontFragment
        self.moreFragments = moreFragments
        self.fragmentOffset = fragmentOffset
    }

    /// The header of `packet`; its options, if any, are dropped.
    public init(_ packet: IPv4Packet) {
        self.init(
            source: packet.source, destination: packet.destination, protocol: packet.protocol,
            payloadLength: packet.payloadRange.count, timeToLive: packet.timeToLive,
            typeOfService: packet.typeOfService, identification: packet.identification,
            dontFragment: packet.dontFragment, moreFragments: packet.moreFragments,
            fragmentOffset: packet.fragmentOffset)
    }

    /// Writes the 20-byte header, checksum included, at the start of `buffer`.
    ///
    /// Traps if `buffer` is shorter than 20 bytes, an address is not IPv4, the total length exceeds
    /// 65535 or the fragment offset is not a multiple of 8 below 65536: all are caller bugs.
    public func emit(into buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= IPv4Header.length, "buffer too small for an IPv4 header")
        precondition(source.isIPv4 && destination.isIPv4, "IPv4 header with a non-IPv4 address")
        let total = IPv4Header.length + payloadLength
        precondition(payloadLength >= 0 && total <= 0xFFFF, "IPv4 total length out of range")
        precondition(fragmentOffset >= 0 && fragmentOffset % 8 == 0 && fragmentOffset < 0x1_0000, "bad fragment offset")
        buffer[0] = 0x45
        buffer[1] = typeOfService
        buffer.writeU16(UInt16(total), at: 2)
        buffer.writeU16(identification, at: 4)
        var flagsAndOffset = UInt16(fragmentOffset / 8)
        if dontFragment { flagsAndOffset |= 0x4000 }
        if moreFragments { flagsAndOffset |= 0x2000 }
        buffer.writeU16(flagsAndOffset, at: 6)
        buffer[8] = timeToLive
        buffer[9] = self.protocol.rawValue
        buffer.writeU16(0, at: 10)
        source.store(into: buffer, at: 12)
        destination.store(into: buffer, at: 16)
        let header = UnsafeRawBufferPointer(rebasing: buffer[0..<IPv4Header.length])
        buffer.writeU16(Checksum.checksum(header), at: 10)
    }
}
