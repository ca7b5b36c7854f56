/// The fields of an IPv6 fixed header as plain values: parse one out of an `IPv6Packet`, or fill one
/// in and `emit` it. Extension headers are not part of it.
public struct IPv6Header: Hashable, Sendable {
    /// Must be an IPv6 address.
    public var source: IPAddress
    /// Must be an IPv6 address.
    public var destination: IPAddress
    public var nextHeader: IPProtocol
    /// Bytes after the fixed header (extension headers included).
    public var payloadLength: Int
    public var hopLimit: UInt8
    public var trafficClass: UInt8
    /// 20 bits.
    public var flowLabel: UInt32

    /// The fixed header's length.
    public static let length = 40

    public init(
        source: IPAddress, destination: IPAddress, nextHeader: IPProtocol, payloadLength: Int,
        hopLimit: UInt8 = 64, trafficClass: UInt8 = 0, flowLabel: UInt32 = 0
    ) {
        self.source = source
        self.destination = destination
        self.nextHeader = nextHeader
        self.payloadLength = payloadLength
        self.hopLimit = hopLimit
        self.trafficClass = trafficClass
        self.flowLabel = flowLabel
    }

    /// The fixed header of `packet`.
    public init(_ packet: IPv6Packet) {
        self.init(
            source: packet.source, destination: packet.destination, nextHeader: packet.nextHeader,
            payloadLength: packet.payloadLength, hopLimit: packet.hopLimit,
            trafficClass: packet.trafficClass, flowLabel: packet.flowLabel)
    }

    /// Writes the 40-byte header at the start of `buffer`.
    ///
    /// Traps if `buffer` is shorter than 40 bytes, an address is not IPv6, the payload length exceeds
    /// 65535 or the flow label 20 bits: all are caller bugs.
    public func emit(into buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= IPv6Header.length, "buffer too small for an IPv6 header")
        precondition(!source.isIPv4 && !destination.isIPv4, "IPv6 header with a non-IPv6 address")
        precondition(payloadLength >= 0 && payloadLength <= 0xFFFF, "IPv6 payload length out of range")
        precondition(flowLabel <= 0xF_FFFF, "IPv6 flow label wider than 20 bits")
        buffer.writeU32(6 << 28 | UInt32(trafficClass) << 20 | flowLabel, at: 0)
        buffer.writeU16(UInt16(payloadLength), at: 4)
        buffer[6] = nextHeader.rawValue
        buffer[7] = hopLimit
        source.store(into: buffer, at: 8)
        destination.store(into: buffer, at: 24)
    }
}
