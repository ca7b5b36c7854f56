/// What the stack needs to know about an inbound IP packet to route it: protocol, addresses, ports,
/// TCP flags, or a `WireError` saying why it must be dropped.
///
/// One call per packet, no allocation. It validates every length on the way (IP header, extension
/// headers, TCP data offset, UDP length) and never traps on any input. Checksums are verified only as
/// `checks` asks: the IPv4 header checksum by default (20 bytes, cheap), the TCP/UDP checksum
/// (the whole payload) only with `.transport`.
///
/// Only unfragmented TCP and UDP are summarised; fragments are `.fragment` (`FragmentReassembler`
/// puts them together), every other protocol is `.unsupportedProtocol` (`ICMPSummary` reads ICMP).
public struct PacketSummary: Hashable, Sendable {
    /// `.tcp` or `.udp`.
    public var `protocol`: IPProtocol
    public var source: SocketEndpoint
    public var destination: SocketEndpoint
    /// Where the TCP or UDP header starts in the packet.
    public var transportOffset: Int
    /// Where the TCP or UDP payload lies in the packet.
    public var payloadRange: Range<Int>
    /// The TCP flags; empty for UDP.
    public var tcpFlags: TCPFlags
    /// The packet's length per its IP header (bytes past it in the buffer are not part of it).
    public var length: Int

    /// Which checksums `init(parsing:checks:)` verifies.
    public struct Checks: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The IPv4 header checksum (IPv6 has none).
        public static let ipv4Header = Checks(rawValue: 1)
        /// The TCP or UDP checksum over pseudo-header, header and payload.
        public static let transport = Checks(rawValue: 2)
        public static let all: Checks = [.ipv4Header, .transport]
    }

    /// Summarises the raw IP packet `packet` (IPv4 or IPv6, chosen by its version nibble).
    public init(parsing packet: UnsafeRawBufferPointer, checks: Checks = .ipv4Header) throws(WireError) {
        guard let first = packet.first else { throw .truncated(.ip) }
        switch first >> 4 {
        case 4:
            let ip = try IPv4Packet(validating: packet)
            if checks.contains(.ipv4Header), !ip.verifyChecksum() { throw .badChecksum(.ipv4) }
            if ip.isFragment { throw .fragment }
            try self.init(
                ip.bytes, transport: ip.protocol, at: ip.headerLength,
                source: ip.source, destination: ip.destination, verify: checks.contains(.transport))
        case 6:
            let ip = try IPv6Packet(validating: packet)
            if ip.isFragment { throw .fragment }
            try self.init(
                ip.bytes, transport: ip.transportProtocol, at: ip.transportOffset,
                source: ip.source, destination: ip.destination, verify: checks.contains(.transport))
        case let version:
            throw .badVersion(version)
        }
    }

    private init(
        _ packet: UnsafeRawBufferPointer, transport proto: IPProtocol, at offset: Int,
        source: IPAddress, destination: IPAddress, verify: Bool
    ) throws(WireError) {
        let segment = packet.slice(offset..<packet.count)
        let sourcePort: UInt16, destinationPort: UInt16, payload: Range<Int>
        switch proto {
        case .tcp:
            let tcp = try TCPSegment(validating: segment)
            if verify, !tcp.verifyChecksum(source: source, destination: destination) { throw .badChecksum(.tcp) }
            sourcePort = tcp.sourcePort
            destinationPort = tcp.destinationPort
            payload = tcp.payloadRange
            tcpFlags = tcp.flags
        case .udp:
            let udp = try UDPDatagram(validating: segment)
            if verify, !udp.verifyChecksum(source: source, destination: destination) { throw .badChecksum(.udp) }
            sourcePort = udp.sourcePort
            destinationPort = udp.destinationPort
            payload = udp.payloadRange
            tcpFlags = []
        default:
            throw .unsupportedProtocol(proto)
        }
        self.protocol = proto
        self.source = SocketEndpoint(address: source, port: sourcePort)
        self.destination = SocketEndpoint(address: destination, port: destinationPort)
        self.transportOffset = offset
        self.payloadRange = offset + payload.lowerBound..<offset + payload.upperBound
        self.length = packet.count
    }
}
