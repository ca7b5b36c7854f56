/// Why a datagram the relay sent failed (DATAGRAM_ERROR, docs/protocol.md §6). The client answers
/// the application with the matching ICMP or ICMPv6 error.
///
/// Values off the wire that are not listed here are a `FrameError.badDatagramErrorCode`.
public enum DatagramErrorCode: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// 1: ICMP port unreachable, `ECONNREFUSED` on the relay's socket.
    case portUnreachable = 1
    /// 2: host or network unreachable (`EHOSTUNREACH`, `ENETUNREACH`).
    case unreachable = 2
    /// 3: the datagram was larger than the path MTU; the frame's `mtu` says how large it may be.
    case tooBig = 3
    /// 4: the relay's destination policy forbids the destination. Sent only on a carrier where the
    /// feature `policyRefusals` is in effect (docs/protocol.md §1.1); otherwise the relay says
    /// `unreachable`. The client answers with ICMP "communication administratively prohibited".
    case forbidden = 4

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .portUnreachable: return "port unreachable: nothing listens there"
        case .unreachable: return "host or network unreachable"
        case .tooBig: return "datagram too big for the path"
        case .forbidden: return "the relay's destination policy forbids this destination"
        }
    }
}
