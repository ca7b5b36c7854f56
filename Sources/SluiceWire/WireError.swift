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
    /// header, or a second fragment header.
    case badExtensionHeader(IPProtocol)
    /// The transport protocol is not one this code handles (SluiceWire summarises TCP and UDP only).
    case unsupportedProtocol(IPProtocol)
    /// A fragment of a larger packet (IPv4 MF set or offset non-zero; IPv6 fragment header with
    /// offset or M set). Sluice does not reassemble.
    case fragment
    /// The segment is itself an RST; RFC 793 never answers an RST with an RST.
    case resetNotAnswered

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
            return "IP fragment: Sluice does not reassemble fragments"
        case .resetNotAnswered:
            return "the segment is an RST; an RST is never answered"
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

    public var description: String {
        switch self {
        case .ip: return "IP"
        case .ipv4: return "IPv4"
        case .ipv6: return "IPv6"
        case .ipv6ExtensionHeader: return "IPv6 extension"
        case .tcp: return "TCP"
        case .udp: return "UDP"
        }
    }
}
