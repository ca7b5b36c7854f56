// Address classes the ICMP rules need (RFC 1122 §3.2.2, RFC 4443 §2.4(e)): who may be answered, and
// from where.

extension IPAddress {
    /// 224.0.0.0/4 or ff00::/8.
    var isMulticast: Bool {
        switch self {
        case .v4(let a): return a >> 28 == 0xE
        case .v6(let hi, _): return hi >> 56 == 0xFF
        }
    }

    /// A destination that is not one host: multicast, or the IPv4 limited broadcast 255.255.255.255
    /// (a subnet's directed broadcast cannot be told from a host address without the prefix).
    var isMulticastOrBroadcast: Bool {
        if case .v4(0xFFFF_FFFF) = self { return true }
        return isMulticast
    }

    /// Whether a packet from this address came from one host: not "this network" (0.0.0.0/8), not
    /// loopback (127.0.0.0/8), not multicast or class E (224.0.0.0/3, broadcast included) for IPv4;
    /// not the unspecified address (::) and not multicast for IPv6.
    var isSingleHostSource: Bool {
        switch self {
        case .v4(let a):
            let first = a >> 24
            return first != 0 && first != 127 && first < 224
        case .v6(let hi, let lo):
            return !(hi == 0 && lo == 0) && !isMulticast
        }
    }
}
