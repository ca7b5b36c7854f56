/// The header in front of every datagram of a UDP association (RFC 1928 §7): the destination
/// (client → server) or the source (server → client) of the datagram that follows.
///
/// ```
/// +-----+------+------+----------+----------+----------+
/// | RSV | FRAG | ATYP | DST.ADDR | DST.PORT |   DATA   |
/// |  2  |  1   |  1   | Variable |    2     | Variable |
/// +-----+------+------+----------+----------+----------+
/// ```
/// Sluice sends FRAG 0 only, and the owner of a decoded header drops datagrams whose FRAG is not 0,
/// as RFC 1928 allows an implementation that does not reassemble.
public struct SocksUDPHeader: Hashable, Sendable {
    public var fragment: UInt8
    public var address: SocksAddress

    public init(fragment: UInt8 = 0, address: SocksAddress) {
        self.fragment = fragment
        self.address = address
    }

    /// Bytes of the header.
    public var encodedLength: Int { 3 + address.encodedLength }

    public func encoded() throws(SocksError) -> [UInt8] {
        var out: [UInt8] = [0, 0, fragment]
        out.reserveCapacity(encodedLength)
        try address.encode(into: &out)
        return out
    }

    /// Writes the header for an IP endpoint into the front of `buffer` and returns its length, or
    /// nil when `buffer` is too short: the datagram path's encoder, which allocates nothing.
    public static func write(ipSource address: SocksAddress, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard case .ip(let ip) = address.host, buffer.count >= 3 + 1 + ip.byteCount + 2 else { return nil }
        buffer[0] = 0
        buffer[1] = 0
        buffer[2] = 0
        buffer[3] = ip.isIPv4 ? SocksAddress.AddressType.ipv4 : SocksAddress.AddressType.ipv6
        ip.store(into: buffer, at: 4)
        let end = 4 + ip.byteCount
        buffer[end] = UInt8(address.port >> 8)
        buffer[end + 1] = UInt8(address.port & 0xFF)
        return end + 2
    }

    /// The header of a whole datagram, and where its data starts. A datagram is complete as it
    /// comes, so a short one is an error here, not a reason to wait.
    public static func decode(datagram bytes: UnsafeRawBufferPointer) throws(SocksUDPHeaderError) -> Decoded<SocksUDPHeader> {
        var r = ByteReader(bytes)
        guard let reserved = r.take(2), let fragment = r.byte() else { throw .truncated }
        guard reserved[0] == 0, reserved[1] == 0 else { throw .socks(.badReserved) }
        let address: SocksAddress?
        do { address = try SocksAddress.decode(&r) } catch { throw .socks(error) }
        guard let address else { throw .truncated }
        return Decoded(value: SocksUDPHeader(fragment: fragment, address: address), length: r.offset)
    }
}

/// Why a datagram of a UDP association did not decode.
public enum SocksUDPHeaderError: Error, Sendable, Equatable {
    /// Shorter than its header.
    case truncated
    case socks(SocksError)
}
