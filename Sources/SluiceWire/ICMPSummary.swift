/// What the client needs to know about an inbound ICMP (IPv4) or ICMPv6 (IPv6) packet: is it an echo
/// request it should answer, an error, or something else — or a `WireError` saying why it is dropped.
///
/// The twin of `PacketSummary`, which leaves ICMP out (`.unsupportedProtocol`): one call per packet,
/// no allocation, every length validated, never traps. Checksums are verified as `checks` asks
/// (`.transport` means the ICMP checksum here). ICMP inside IPv6 and ICMPv6 inside IPv4 are
/// `.unsupportedProtocol`; fragments are `.fragment` (reassemble them first).
public struct ICMPSummary: Hashable, Sendable {
    /// What kind of message it is.
    public enum Kind: Hashable, Sendable {
        /// Echo request (ICMP type 8, ICMPv6 type 128), code 0.
        case echoRequest(identifier: UInt16, sequenceNumber: UInt16)
        /// Echo reply (ICMP type 0, ICMPv6 type 129), code 0.
        case echoReply(identifier: UInt16, sequenceNumber: UInt16)
        /// An error message (ICMP types 3, 4, 5, 11, 12; ICMPv6 types 0–127).
        case error
        /// Anything else: timestamps, router and neighbour discovery, multicast listener messages.
        case other
    }

    public var kind: Kind
    public var type: UInt8
    public var code: UInt8
    public var source: IPAddress
    public var destination: IPAddress
    /// Where the ICMP header starts in the packet.
    public var messageOffset: Int
    /// The packet's length per its IP header.
    public var length: Int

    /// Summarises the raw IP packet `packet` (IPv4 or IPv6, chosen by its version nibble).
    public init(parsing packet: UnsafeRawBufferPointer, checks: PacketSummary.Checks = .ipv4Header) throws(WireError) {
        guard let first = packet.first else { throw .truncated(.ip) }
        let isEcho: Bool, isReply: Bool, message: UnsafeRawBufferPointer
        switch first >> 4 {
        case 4:
            let ip = try IPv4Packet(validating: packet)
            if checks.contains(.ipv4Header), !ip.verifyChecksum() { throw .badChecksum(.ipv4) }
            if ip.isFragment { throw .fragment }
            guard ip.protocol == .icmp else { throw .unsupportedProtocol(ip.protocol) }
            let icmp = try ICMPv4Message(validating: ip.payload)
            if checks.contains(.transport), !icmp.verifyChecksum() { throw .badChecksum(.icmp) }
            (source, destination, messageOffset, length) = (ip.source, ip.destination, ip.headerLength, ip.bytes.count)
            isEcho = icmp.type == ICMPv4Type.echoRequest
            isReply = icmp.type == ICMPv4Type.echoReply
            kind = icmp.isError ? .error : .other
            message = icmp.bytes
        case 6:
            let ip = try IPv6Packet(validating: packet)
            if ip.isFragment { throw .fragment }
            guard ip.transportProtocol == .icmpv6 else { throw .unsupportedProtocol(ip.transportProtocol) }
            let icmp = try ICMPv6Message(validating: ip.transport)
            if checks.contains(.transport), !icmp.verifyChecksum(source: ip.source, destination: ip.destination) {
                throw .badChecksum(.icmpv6)
            }
            (source, destination, messageOffset, length) = (ip.source, ip.destination, ip.transportOffset, ip.bytes.count)
            isEcho = icmp.type == ICMPv6Type.echoRequest
            isReply = icmp.type == ICMPv6Type.echoReply
            kind = icmp.isError ? .error : .other
            message = icmp.bytes
        case let version:
            throw .badVersion(version)
        }
        type = message[0]
        code = message[1]
        if code == 0 && (isEcho || isReply) {
            let identifier = message.readU16(at: 4), sequenceNumber = message.readU16(at: 6)
            kind = isEcho
                ? .echoRequest(identifier: identifier, sequenceNumber: sequenceNumber)
                : .echoReply(identifier: identifier, sequenceNumber: sequenceNumber)
        }
    }

    /// Shorthand for `kind` being `.echoRequest`.
    public var isEchoRequest: Bool {
        if case .echoRequest = kind { return true } else { return false }
    }
}
