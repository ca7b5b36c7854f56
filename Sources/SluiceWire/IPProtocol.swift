/// An IP protocol number: the IPv4 `protocol` field, an IPv6 `next header` (IANA registry).
///
/// A struct rather than an enum so that any byte off the wire is representable.
public struct IPProtocol: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8

    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// IPv6 hop-by-hop options (extension header).
    public static let hopByHop = IPProtocol(rawValue: 0)
    public static let icmp = IPProtocol(rawValue: 1)
    public static let tcp = IPProtocol(rawValue: 6)
    public static let udp = IPProtocol(rawValue: 17)
    /// IPv6 routing header (extension header).
    public static let routing = IPProtocol(rawValue: 43)
    /// IPv6 fragment header (extension header).
    public static let fragment = IPProtocol(rawValue: 44)
    public static let icmpv6 = IPProtocol(rawValue: 58)
    /// IPv6 "no next header".
    public static let noNextHeader = IPProtocol(rawValue: 59)
    /// IPv6 destination options (extension header).
    public static let destinationOptions = IPProtocol(rawValue: 60)

    public var description: String {
        switch self {
        case .hopByHop: return "hop-by-hop(0)"
        case .icmp: return "ICMP(1)"
        case .tcp: return "TCP(6)"
        case .udp: return "UDP(17)"
        case .routing: return "routing(43)"
        case .fragment: return "fragment(44)"
        case .icmpv6: return "ICMPv6(58)"
        case .noNextHeader: return "no-next-header(59)"
        case .destinationOptions: return "destination-options(60)"
        default: return "protocol \(rawValue)"
        }
    }
}
