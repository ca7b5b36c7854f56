import Glibc

/// An IPv4 or IPv6 address as raw network-order bytes (4 or 16).
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(UInt32)  // host byte order value of the dotted quad: 10.0.0.1 == 0x0A00_0001
    case v6(UInt64, UInt64)  // high and low 64 bits, host byte order

    /// Parses dotted-quad IPv4 or RFC 4291 IPv6 text (no zone, no brackets).
    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self.init(v6Bytes: withUnsafeBytes(of: &v6) { Array($0) })
            return
        }
        return nil
    }

    /// From 4 or 16 network-order bytes.
    public init(bytes: some Collection<UInt8>) {
        let b = Array(bytes)
        if b.count == 4 {
            self = .v4(b.reduce(0) { $0 << 8 | UInt32($1) })
        } else {
            precondition(b.count == 16, "IPAddress needs 4 or 16 bytes")
            self.init(v6Bytes: b)
        }
    }

    private init(v6Bytes b: [UInt8]) {
        let hi = b[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let lo = b[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        self = .v6(hi, lo)
    }

    public var isIPv4: Bool { if case .v4 = self { return true } else { return false } }

    /// Address length in bits: 32 or 128.
    public var bitWidth: Int { isIPv4 ? 32 : 128 }

    /// Network-order bytes (4 or 16).
    public var bytes: [UInt8] {
        switch self {
        case .v4(let a): return withUnsafeBytes(of: a.bigEndian) { Array($0) }
        case .v6(let hi, let lo): return withUnsafeBytes(of: hi.bigEndian) { Array($0) } + withUnsafeBytes(of: lo.bigEndian) { Array($0) }
        }
    }

    /// True for 127.0.0.0/8 and ::1.
    public var isLoopback: Bool {
        switch self {
        case .v4(let a): return a >> 24 == 127
        case .v6(let hi, let lo): return hi == 0 && lo == 1
        }
    }

    public var description: String {
        var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var raw = bytes
        _ = inet_ntop(isIPv4 ? AF_INET : AF_INET6, &raw, &out, socklen_t(out.count))
        let end = out.firstIndex(of: 0) ?? out.endIndex
        return String(decoding: out[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An address prefix such as `10.20.0.0/24` or `fd20::/64`.
public struct IPPrefix: Hashable, Sendable, CustomStringConvertible {
    public let address: IPAddress
    public let length: Int

    public init?(address: IPAddress, length: Int) {
        guard (0...address.bitWidth).contains(length) else { return nil }
        self.address = address
        self.length = length
    }

    /// Parses `address/length`; a bare address is a host prefix (/32 or /128).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(String(parts[0])) else { return nil }
        if parts.count == 2 {
            guard let length = Int(parts[1]), String(length) == parts[1] else { return nil }
            self.init(address: address, length: length)
        } else {
            self.init(address: address, length: address.bitWidth)
        }
    }

    /// Whether `other` lies inside this prefix.
    public func contains(_ other: IPAddress) -> Bool {
        guard other.isIPv4 == address.isIPv4 else { return false }
        let a = address.bytes, b = other.bytes
        var bits = length
        for i in 0..<a.count where bits > 0 {
            let take = min(8, bits)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            if a[i] & mask != b[i] & mask { return false }
            bits -= take
        }
        return true
    }

    public var description: String { "\(address)/\(length)" }
}

/// A transport endpoint: address and port. Text form `1.2.3.4:7000` or `[::1]:7000`.
public struct SocketEndpoint: Hashable, Sendable, CustomStringConvertible {
    public let address: IPAddress
    public let port: UInt16

    public init(address: IPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// One word for an IPv4 endpoint, where the synthesized hash fed the hasher three (the address's
    /// case, the address, the port). Endpoints key the client's UDP mappings and, in pairs, its TCP
    /// flows, looked up several times for each new socket or connection. Equality stays synthesized.
    @inlinable public func hash(into hasher: inout Hasher) {
        switch address {
        case .v4(let a):
            hasher.combine(UInt64(a) << 16 | UInt64(port))
        case .v6(let hi, let lo):
            hasher.combine(hi)
            hasher.combine(lo)
            hasher.combine(port)
        }
    }

    public init?(_ text: String) {
        let host: Substring, portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard let address = IPAddress(String(host)), let port = UInt16(portText), String(port) == portText else { return nil }
        self.init(address: address, port: port)
    }

    public var description: String { address.isIPv4 ? "\(address):\(port)" : "[\(address)]:\(port)" }
}
