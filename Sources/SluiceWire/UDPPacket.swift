/// Writes whole UDP/IP packets: the client synthesises the datagrams a remote endpoint sent, toward
/// the application, this way.
///
/// IPv4: a 20-byte header, TTL 64, DF and identification as given. A packet that will go through
/// `IPv4Fragmenter` should be written without DF and with an identification of its own (RFC 6864);
/// one that will not may keep the defaults, DF and 0. IPv6: the fixed header, hop limit 64, flow
/// label 0. The UDP checksum is always computed (a zero result is sent as `0xFFFF`).
///
/// A packet larger than the TUN's MTU goes through `IPv4Fragmenter` or `IPv6Fragmenter`.
public enum UDPPacket {
    /// Bytes in front of the payload: IPv4 header and UDP header.
    public static let ipv4HeaderLength = IPv4Header.length + UDPHeader.length
    /// Bytes in front of the payload: IPv6 header and UDP header.
    public static let ipv6HeaderLength = IPv6Header.length + UDPHeader.length
    /// The largest IPv4 payload: 65535 − 28.
    public static let maximumIPv4Payload = 0xFFFF - ipv4HeaderLength
    /// The largest IPv6 payload: 65535 − 8 (the payload length field does not count the fixed
    /// header; jumbograms are not supported).
    public static let maximumIPv6Payload = 0xFFFF - UDPHeader.length

    /// The headers' length in front of a payload for packets of `address`'s family.
    public static func headerLength(for address: IPAddress) -> Int {
        address.isIPv4 ? ipv4HeaderLength : ipv6HeaderLength
    }

    /// Writes the packet carrying a copy of `payload` from `source` to `destination` into `buffer`
    /// and returns its length.
    ///
    /// Throws `.addressFamilyMismatch` if the endpoints differ in family and `.badTotalLength(.udp, n)`
    /// if the payload is too long for one packet. Traps if `buffer` is shorter than the packet
    /// (`headerLength(for:) + payload.count`); `buffer` must not overlap `payload`.
    public static func emit(
        from source: SocketEndpoint, to destination: SocketEndpoint, payload: UnsafeRawBufferPointer,
        identification: UInt16 = 0, dontFragment: Bool = true, into buffer: UnsafeMutableRawBufferPointer
    ) throws(WireError) -> Int {
        let at = headerLength(for: source.address)
        try check(source, destination, payloadLength: payload.count)
        precondition(buffer.count >= at + payload.count, "buffer too small for the UDP packet")
        UnsafeMutableRawBufferPointer(rebasing: buffer[at..<at + payload.count]).copyMemory(from: payload)
        return try emitHeaders(
            from: source, to: destination, payloadLength: payload.count, identification: identification,
            dontFragment: dontFragment, into: buffer)
    }

    /// Writes the headers in front of a payload of `payloadLength` bytes that the caller already put
    /// at `headerLength(for: source.address)` in `buffer` (for example while taking a datagram out of
    /// its frames), and returns the packet's length. No copy.
    ///
    /// Throws and traps as `emit(from:to:payload:identification:dontFragment:into:)` does.
    public static func emitHeaders(
        from source: SocketEndpoint, to destination: SocketEndpoint, payloadLength: Int,
        identification: UInt16 = 0, dontFragment: Bool = true, into buffer: UnsafeMutableRawBufferPointer
    ) throws(WireError) -> Int {
        try check(source, destination, payloadLength: payloadLength)
        let ipLength = source.address.isIPv4 ? IPv4Header.length : IPv6Header.length
        let udpLength = UDPHeader.length + payloadLength
        let total = ipLength + udpLength
        precondition(buffer.count >= total, "buffer too small for the UDP packet")
        if source.address.isIPv4 {
            IPv4Header(
                source: source.address, destination: destination.address, protocol: .udp, payloadLength: udpLength,
                identification: identification, dontFragment: dontFragment
            ).emit(into: buffer)
        } else {
            IPv6Header(source: source.address, destination: destination.address, nextHeader: .udp, payloadLength: udpLength)
                .emit(into: buffer)
        }
        UDPHeader(sourcePort: source.port, destinationPort: destination.port)
            .emit(into: UnsafeMutableRawBufferPointer(rebasing: buffer[ipLength..<total]), source: source.address, destination: destination.address)
        return total
    }

    private static func check(_ source: SocketEndpoint, _ destination: SocketEndpoint, payloadLength: Int) throws(WireError) {
        guard source.address.isIPv4 == destination.address.isIPv4 else { throw .addressFamilyMismatch }
        let maximum = source.address.isIPv4 ? maximumIPv4Payload : maximumIPv6Payload
        guard payloadLength >= 0, payloadLength <= maximum else {
            throw .badTotalLength(.udp, UDPHeader.length &+ payloadLength)
        }
    }
}
