/// Builds the RST a TCP endpoint sends for a segment that reaches no connection (RFC 9293 §3.10.7.1,
/// as RFC 793 had it), used to refuse a held SYN when the relay answered RESET.
///
/// - the segment has ACK: `<SEQ=SEG.ACK><CTL=RST>`;
/// - otherwise: `<SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>`, where SEG.LEN counts the payload plus
///   one for SYN and one for FIN (a bare SYN with sequence `s` gets `ack = s + 1`);
/// - an RST is never answered.
///
/// Addresses and ports are swapped; the IP header has TTL/hop limit 64, DF set, no options; the RST
/// has no options and no payload, window 0.
public enum TCPReset {
    /// The length of the RST over IPv4 (40) and IPv6 (60); the largest a caller's buffer needs.
    public static let ipv4Length = IPv4Header.length + TCPSegment.minimumHeaderLength
    public static let ipv6Length = IPv6Header.length + TCPSegment.minimumHeaderLength
    public static let maximumLength = ipv6Length

    /// Writes the RST answering the raw IP packet `packet` into `buffer` and returns its length.
    ///
    /// Throws what parsing `packet` throws (including `.unsupportedProtocol` for non-TCP and
    /// `.fragment`), or `.resetNotAnswered`. Checksums of `packet` are not verified. Traps if `buffer`
    /// is shorter than the RST (`maximumLength` always suffices).
    public static func emit(
        answering packet: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer
    ) throws(WireError) -> Int {
        guard let first = packet.first else { throw .truncated(.ip) }
        let source: IPAddress, destination: IPAddress, segmentBytes: UnsafeRawBufferPointer
        switch first >> 4 {
        case 4:
            let ip = try IPv4Packet(validating: packet)
            if ip.isFragment { throw .fragment }
            guard ip.protocol == .tcp else { throw .unsupportedProtocol(ip.protocol) }
            (source, destination, segmentBytes) = (ip.source, ip.destination, ip.payload)
        case 6:
            let ip = try IPv6Packet(validating: packet)
            if ip.isFragment { throw .fragment }
            guard ip.transportProtocol == .tcp else { throw .unsupportedProtocol(ip.transportProtocol) }
            (source, destination, segmentBytes) = (ip.source, ip.destination, ip.transport)
        case let version:
            throw .badVersion(version)
        }
        let segment = try TCPSegment(validating: segmentBytes)
        return try emit(answering: segment, from: source, to: destination, into: buffer)
    }

    /// Writes the RST answering `segment`, which travelled from `source` to `destination`, into
    /// `buffer` and returns its length. Throws `.resetNotAnswered` for an RST.
    public static func emit(
        answering segment: TCPSegment, from source: IPAddress, to destination: IPAddress,
        into buffer: UnsafeMutableRawBufferPointer
    ) throws(WireError) -> Int {
        let flags = segment.flags
        if flags.contains(.rst) { throw .resetNotAnswered }
        precondition(source.isIPv4 == destination.isIPv4, "addresses of different families")
        let tcp: TCPHeader
        if flags.contains(.ack) {
            tcp = TCPHeader(
                sourcePort: segment.destinationPort, destinationPort: segment.sourcePort,
                sequenceNumber: segment.acknowledgmentNumber, acknowledgmentNumber: 0,
                flags: .rst, window: 0)
        } else {
            tcp = TCPHeader(
                sourcePort: segment.destinationPort, destinationPort: segment.sourcePort,
                sequenceNumber: 0,
                acknowledgmentNumber: segment.sequenceNumber &+ UInt32(segment.sequenceLength),
                flags: [.rst, .ack], window: 0)
        }
        let ipLength: Int
        if source.isIPv4 {
            ipLength = IPv4Header.length
            precondition(buffer.count >= ipLength + tcp.length, "buffer too small for the RST")
            IPv4Header(source: destination, destination: source, protocol: .tcp, payloadLength: tcp.length)
                .emit(into: buffer)
        } else {
            ipLength = IPv6Header.length
            precondition(buffer.count >= ipLength + tcp.length, "buffer too small for the RST")
            IPv6Header(source: destination, destination: source, nextHeader: .tcp, payloadLength: tcp.length)
                .emit(into: buffer)
        }
        let total = ipLength + tcp.length
        tcp.emit(into: UnsafeMutableRawBufferPointer(rebasing: buffer[ipLength..<total]), source: destination, destination: source)
        return total
    }
}
