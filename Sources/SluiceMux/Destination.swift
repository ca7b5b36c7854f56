import SluiceWire

/// Where a stream goes: the host part of an OPEN frame's destination.
public enum DestinationHost: Hashable, Sendable {
    case ip(IPAddress)
    /// A host name the relay resolves; 1 to 255 bytes of letters, digits, `-`, `.` and `_`.
    case domain(String)
}

/// An OPEN frame's destination: `addrType` u8, the address, `port` u16 (docs/protocol.md §3).
///
/// ```
/// addrType 1: IPv4    | 4 bytes                  | port u16
/// addrType 4: IPv6    | 16 bytes                 | port u16
/// addrType 3: domain  | length u8 (1...255), name | port u16
/// ```
public struct Destination: Hashable, Sendable, CustomStringConvertible {
    public var host: DestinationHost
    public var port: UInt16

    /// The address type bytes.
    public enum AddressType {
        public static let ipv4: UInt8 = 1
        public static let domain: UInt8 = 3
        public static let ipv6: UInt8 = 4
    }

    public init(host: DestinationHost, port: UInt16) {
        self.host = host
        self.port = port
    }

    public init(_ endpoint: SocketEndpoint) {
        self.init(host: .ip(endpoint.address), port: endpoint.port)
    }

    /// Bytes of the encoding: type, address, port.
    public var encodedLength: Int {
        switch host {
        case .ip(let a): return 1 + a.byteCount + 2
        case .domain(let name): return 1 + 1 + name.utf8.count + 2
        }
    }

    /// Whether `name` may travel as a domain: 1 to 255 bytes, each a letter, digit, `-`, `.` or `_`.
    /// (The relay hands the name to its resolver; the rule keeps NUL bytes, spaces and control
    /// characters out of it.)
    public static func isValidDomain(_ name: String) -> Bool {
        let utf8 = name.utf8
        return (1...255).contains(utf8.count) && utf8.allSatisfy(isDomainByte)
    }

    static func isDomainByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    /// Writes the encoding at `offset` and returns the offset after it.
    ///
    /// Throws `.badDomain` for a name `isValidDomain` rejects; traps if `buffer` is too short (the
    /// caller sized it with `encodedLength`).
    public func encode(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(FrameError) -> Int {
        if case .domain(let name) = host, !Destination.isValidDomain(name) { throw .badDomain }
        precondition(offset >= 0 && buffer.count - offset >= encodedLength, "buffer too small for the destination")
        var at = offset
        switch host {
        case .ip(let address):
            buffer[at] = address.isIPv4 ? AddressType.ipv4 : AddressType.ipv6
            address.store(into: buffer, at: at + 1)
            at += 1 + address.byteCount
        case .domain(let name):
            buffer[at] = AddressType.domain
            buffer[at + 1] = UInt8(name.utf8.count)
            at += 2
            for b in name.utf8 {  // at most 255 bytes, on OPEN only
                buffer[at] = b
                at += 1
            }
        }
        buffer.writeU16(port, at: at)
        return at + 2
    }

    /// Decodes a destination from the start of `bytes`; returns it and the bytes it took.
    ///
    /// Throws `.truncated` if `bytes` ends inside it, `.badAddressType`, or `.badDomain`.
    public static func decode(from bytes: UnsafeRawBufferPointer) throws(FrameError) -> (Destination, length: Int) {
        guard let type = bytes.first else { throw .truncated }
        let host: DestinationHost, at: Int
        switch type {
        case AddressType.ipv4:
            guard bytes.count >= 1 + 4 + 2 else { throw .truncated }
            host = .ip(IPAddress(v4In: bytes, at: 1))
            at = 5
        case AddressType.ipv6:
            guard bytes.count >= 1 + 16 + 2 else { throw .truncated }
            host = .ip(IPAddress(v6In: bytes, at: 1))
            at = 17
        case AddressType.domain:
            guard bytes.count >= 2 else { throw .truncated }
            let length = Int(bytes[1])
            guard bytes.count >= 2 + length + 2 else { throw .truncated }
            let name = UnsafeRawBufferPointer(rebasing: bytes[2..<2 + length])
            guard length > 0, name.allSatisfy(isDomainByte) else { throw .badDomain }
            host = .domain(String(decoding: name, as: UTF8.self))
            at = 2 + length
        default:
            throw .badAddressType(type)
        }
        return (Destination(host: host, port: bytes.readU16(at: at)), at + 2)
    }

    /// `93.184.216.34:443`, `[2001:db8::1]:443`, `example.com:443`.
    public var description: String {
        switch host {
        case .ip(let address): return SocketEndpoint(address: address, port: port).description
        case .domain(let name): return "\(name):\(port)"
        }
    }
}
