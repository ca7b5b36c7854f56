/// Why a packet was rejected by a parser in SluiceWire.
///
/// On the packet path these are counted and logged, never thrown out of the loop; each renders as a
/// sentence fit for a log line.
public enum WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The buffer ends before the named header does.
    case truncated(WireLayer)
    /// The IP version nibble is not 4 or 6 (or not the one the view expects).
    case badVersion(UInt8)
    /// A header length field is impossible: IPv4 IHL below 5, or a TCP data offset below 5 or past the
    /// end of the segment. Carries the length in bytes.
    case badHeaderLength(WireLayer, Int)
    /// A total length field is impossible: an IPv4 total length smaller than the header or larger than
    /// the buffer, an IPv6 payload length past the buffer, a UDP length below 8 or past the IP payload.
    case badTotalLength(WireLayer, Int)
    /// The named layer's checksum does not verify.
    case badChecksum(WireLayer)
    /// An IPv6 extension header where it may not be: hop-by-hop options not right after the fixed
    /// header, or a second fragment header (also: a fragment header in a packet given to
    /// `IPv6Fragmenter`, which does not fragment fragments).
    case badExtensionHeader(IPProtocol)
    /// The transport protocol is not one this code handles (`PacketSummary` summarises TCP and UDP,
    /// `ICMPSummary` ICMP over IPv4 and ICMPv6 over IPv6).
    case unsupportedProtocol(IPProtocol)
    /// A fragment of a larger packet (IPv4 MF set or offset non-zero; IPv6 fragment header with
    /// offset or M set). The views do not reassemble; `FragmentReassembler` does.
    case fragment
    /// The segment is itself an RST; RFC 793 never answers an RST with an RST.
    case resetNotAnswered
    /// The packet may not be answered with an ICMP echo reply or error (RFC 1122 §3.2.2, RFC 4443
    /// §2.4(e)); the reason says which rule applies.
    case notAnswered(NoAnswerReason)
    /// Two addresses that must be of one family (the ends of a packet, an error's source and its
    /// destination) are not.
    case addressFamilyMismatch
    /// The MTU cannot carry a fragment: after the headers it leaves less than 8 bytes of data.
    case mtuTooSmall(Int)
    /// A DNS message that cannot be a query with a question (`DNSQuestion`); the problem says why.
    case badDNS(DNSProblem)

    public var description: String {
        switch self {
        case .truncated(let layer):
            return "truncated \(layer) header: the packet ends before the header does"
        case .badVersion(let v):
            return "bad IP version \(v): expected 4 or 6"
        case .badHeaderLength(let layer, let n):
            return "bad \(layer) header length \(n) bytes: below the minimum or past the end of the packet"
        case .badTotalLength(let layer, let n):
            return "bad \(layer) length field \(n) bytes: does not fit the header or the bytes received"
        case .badChecksum(let layer):
            return "bad \(layer) checksum"
        case .badExtensionHeader(let p):
            return "misplaced IPv6 extension header \(p)"
        case .unsupportedProtocol(let p):
            return "unsupported transport protocol \(p)"
        case .fragment:
            return "IP fragment: it must be reassembled before it can be read"
        case .resetNotAnswered:
            return "the segment is an RST; an RST is never answered"
        case .notAnswered(let reason):
            return "the packet is not answered: \(reason)"
        case .addressFamilyMismatch:
            return "an IPv4 and an IPv6 address in one packet"
        case .mtuTooSmall(let mtu):
            return "MTU \(mtu) is too small to carry a fragment"
        case .badDNS(let problem):
            return "bad DNS query: \(problem)"
        }
    }
}

/// The header a `WireError` is about.
public enum WireLayer: Hashable, Sendable, CustomStringConvertible {
    /// Not even the version nibble: an empty buffer.
    case ip
    case ipv4
    case ipv6
    case ipv6ExtensionHeader
    case tcp
    case udp
    case icmp
    case icmpv6
    /// A DNS message (RFC 1035 §4.1): its header, or a name or question field in it.
    case dns

    public var description: String {
        switch self {
        case .ip: return "IP"
        case .ipv4: return "IPv4"
        case .ipv6: return "IPv6"
        case .ipv6ExtensionHeader: return "IPv6 extension"
        case .tcp: return "TCP"
        case .udp: return "UDP"
        case .icmp: return "ICMP"
        case .icmpv6: return "ICMPv6"
        case .dns: return "DNS"
        }
    }
}

/// Why a packet gets no ICMP answer (`WireError.notAnswered`).
public enum NoAnswerReason: Hashable, Sendable, CustomStringConvertible {
    /// An echo reply was asked for a message that is not an echo request.
    case notEchoRequest
    /// The packet is itself an ICMP error: errors are never answered with errors.
    case icmpError
    /// The packet is an IPv4 fragment other than the first.
    case laterFragment
    /// The packet went to a multicast or broadcast address (for an echo reply: the reply would come
    /// from it).
    case multicastOrBroadcast
    /// The packet's source is not one host: unspecified, loopback, multicast, broadcast or class E.
    case sourceNotUnicast

    public var description: String {
        switch self {
        case .notEchoRequest: return "it is not an echo request"
        case .icmpError: return "it is an ICMP error, and errors are never answered with errors"
        case .laterFragment: return "it is a fragment other than the first"
        case .multicastOrBroadcast: return "it was sent to a multicast or broadcast address"
        case .sourceNotUnicast: return "its source address is not a single host"
        }
    }
}
