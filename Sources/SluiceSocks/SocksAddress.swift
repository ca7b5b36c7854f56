import SluiceWire

/// DST.ADDR/DST.PORT and BND.ADDR/BND.PORT of RFC 1928 §4–6: an address type, the address, a port.
///
/// ```
/// ATYP 1: IPv4    | 4 bytes                      | port u16
/// ATYP 4: IPv6    | 16 bytes                     | port u16
/// ATYP 3: domain  | length u8 (1...255), name    | port u16
/// ```
/// A domain is kept as the bytes the peer sent; RFC 1928 puts no rule on them, so whoever resolves
/// or forwards the name checks it (the front-end refuses what docs/protocol.md cannot carry).
public struct SocksAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Host: Hashable, Sendable {
        case ip(IPAddress)
        case domain([UInt8])
    }

    public var host: Host
    public var port: UInt16

    public init(host: Host, port: UInt16) {
        self.host = host
        self.port = port
    }

    public init(_ endpoint: SocketEndpoint) {
        self.init(host: .ip(endpoint.address), port: endpoint.port)
    }

    /// 0.0.0.0:0, what a client sends when it does not know yet (UDP ASSOCIATE) and a server's
    /// BND of a reply that reports a failure.
    public static let unspecifiedIPv4 = SocksAddress(host: .ip(.v4(0)), port: 0)

    /// The endpoint when the host is an IP address.
    public var endpoint: SocketEndpoint? {
        if case .ip(let address) = host { return SocketEndpoint(address: address, port: port) }
        return nil
    }

    public enum AddressType {
        public static let ipv4: UInt8 = 1
        public static let domain: UInt8 = 3
        public static let ipv6: UInt8 = 4
    }

    /// Bytes of the encoding.
    public var encodedLength: Int {
        switch host {
        case .ip(let a): return 1 + a.byteCount + 2
        case .domain(let name): return 2 + name.count + 2
        }
    }

    /// Appends the encoding to `out`.
    public func encode(into out: inout [UInt8]) throws(SocksError) {
        switch host {
        case .ip(let a):
            out.append(a.isIPv4 ? AddressType.ipv4 : AddressType.ipv6)
            out += a.bytes
        case .domain(let name):
            guard !name.isEmpty else { throw .emptyDomain }
            guard name.count <= 255 else { throw .tooLong(field: "domain", length: name.count) }
            out.append(AddressType.domain)
            out.append(UInt8(name.count))
            out += name
        }
        out.append(UInt8(port >> 8))
        out.append(UInt8(port & 0xFF))
    }

    /// Decodes an address at the reader's position; nil when the bytes end first.
    static func decode(_ reader: inout ByteReader) throws(SocksError) -> SocksAddress? {
        guard let type = reader.byte() else { return nil }
        let host: Host
        switch type {
        case AddressType.ipv4:
            guard let raw = reader.take(4) else { return nil }
            host = .ip(IPAddress(v4In: raw, at: 0))
        case AddressType.ipv6:
            guard let raw = reader.take(16) else { return nil }
            host = .ip(IPAddress(v6In: raw, at: 0))
        case AddressType.domain:
            guard let length = reader.byte() else { return nil }
            guard length > 0 else { throw .emptyDomain }
            guard let name = reader.take(Int(length)) else { return nil }
            host = .domain(Array(name))
        default:
            throw .badAddressType(type)
        }
        guard let port = reader.uint16() else { return nil }
        return SocksAddress(host: host, port: port)
    }

    public var description: String {
        switch host {
        case .ip(let a): return SocketEndpoint(address: a, port: port).description
        case .domain(let name): return "\(String(decoding: name, as: UTF8.self)):\(port)"
        }
    }
}
