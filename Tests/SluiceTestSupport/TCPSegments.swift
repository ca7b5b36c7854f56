import SluiceWire

/// One TCP segment as the stack emitted it, checked and copied out.
public struct Segment: Equatable, CustomStringConvertible {
    public var source: SocketEndpoint
    public var destination: SocketEndpoint
    public var sequenceNumber: UInt32
    public var acknowledgmentNumber: UInt32
    public var flags: TCPFlags
    public var window: UInt16
    public var maximumSegmentSize: UInt16?
    public var payload: [UInt8]

    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    /// Parses an IPv4 or IPv6 packet carrying TCP; checks the IPv4 header checksum and the TCP
    /// checksum.
    public init(parsing packet: [UInt8]) throws {
        self = try packet.withUnsafeBytes { bytes throws -> Segment in
            let summary = try PacketSummary(parsing: bytes, checks: .all)
            guard summary.protocol == .tcp else { throw Invalid(description: "not TCP: \(summary.protocol)") }
            guard summary.length == bytes.count else { throw Invalid(description: "trailing bytes after the IP packet") }
            let tcp = try TCPSegment(validating: UnsafeRawBufferPointer(rebasing: bytes[summary.transportOffset..<summary.length]))
            return Segment(
                source: summary.source, destination: summary.destination, sequenceNumber: tcp.sequenceNumber,
                acknowledgmentNumber: tcp.acknowledgmentNumber, flags: tcp.flags, window: tcp.window,
                maximumSegmentSize: tcp.maximumSegmentSize, payload: Array(tcp.payload))
        }
    }

    public init(
        source: SocketEndpoint, destination: SocketEndpoint, sequenceNumber: UInt32, acknowledgmentNumber: UInt32,
        flags: TCPFlags, window: UInt16, maximumSegmentSize: UInt16?, payload: [UInt8]
    ) {
        self.source = source
        self.destination = destination
        self.sequenceNumber = sequenceNumber
        self.acknowledgmentNumber = acknowledgmentNumber
        self.flags = flags
        self.window = window
        self.maximumSegmentSize = maximumSegmentSize
        self.payload = payload
    }

    public var description: String {
        "\(source) -> \(destination) \(flags) seq \(sequenceNumber) ack \(acknowledgmentNumber) len \(payload.count)"
    }
}

/// Builds one IP packet carrying a TCP segment, checksums included, with SluiceWire's emitters.
public func tcpPacket(
    from source: SocketEndpoint, to destination: SocketEndpoint, seq: UInt32, ack: UInt32 = 0, flags: TCPFlags,
    window: UInt16 = 65535, mss: UInt16? = nil, payload: [UInt8] = []
) -> [UInt8] {
    let tcp = TCPHeader(
        sourcePort: source.port, destinationPort: destination.port, sequenceNumber: seq, acknowledgmentNumber: ack,
        flags: flags, window: window, maximumSegmentSize: mss)
    let ipLength = source.address.isIPv4 ? IPv4Header.length : IPv6Header.length
    let segmentLength = tcp.length + payload.count
    var packet = [UInt8](repeating: 0, count: ipLength + segmentLength)
    packet.withUnsafeMutableBytes { buffer in
        if source.address.isIPv4 {
            IPv4Header(source: source.address, destination: destination.address, protocol: .tcp, payloadLength: segmentLength)
                .emit(into: buffer)
        } else {
            IPv6Header(source: source.address, destination: destination.address, nextHeader: .tcp, payloadLength: segmentLength)
                .emit(into: buffer)
        }
        let segment = UnsafeMutableRawBufferPointer(rebasing: buffer[ipLength...])
        UnsafeMutableRawBufferPointer(rebasing: segment[tcp.length...]).copyBytes(from: payload)
        tcp.emit(into: segment, source: source.address, destination: destination.address)
    }
    return packet
}
