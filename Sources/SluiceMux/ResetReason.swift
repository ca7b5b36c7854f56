/// Why a stream was reset (RESET) or a carrier is going away (GO_AWAY); docs/protocol.md §3.
///
/// Values off the wire that are not listed here are a `FrameError.badReason`.
public enum ResetReason: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// 0: an end aborted the stream.
    case closed = 0
    /// 1: the destination refused the connection.
    case refused = 1
    /// 2: no route, host or network unreachable, or the name did not resolve.
    case unreachable = 2
    /// 3: the connection attempt timed out.
    case timedOut = 3
    /// 4: the relay's per-client stream cap was hit.
    case limit = 4
    /// 5: the peer broke the protocol.
    case protocolError = 5
    /// 6: the relay's destination policy refuses the destination. Sent only on a carrier where the
    /// feature `policyRefusals` is in effect (docs/protocol.md §1.1); otherwise the relay says
    /// `refused`.
    case forbidden = 6

    /// The reason as a kebab-case word, for statistics keys ("timed-out").
    public var name: String {
        switch self {
        case .closed: return "closed"
        case .refused: return "refused"
        case .unreachable: return "unreachable"
        case .timedOut: return "timed-out"
        case .limit: return "limit"
        case .protocolError: return "protocol-error"
        case .forbidden: return "forbidden"
        }
    }

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .closed: return "the other end aborted the stream"
        case .refused: return "the destination refused the connection"
        case .unreachable: return "the destination is unreachable (no route, or the name did not resolve)"
        case .timedOut: return "the connection attempt timed out"
        case .limit: return "the relay's per-client stream limit was reached"
        case .protocolError: return "protocol error: the peer sent frames this end cannot accept"
        case .forbidden: return "the relay's destination policy forbids this destination"
        }
    }
}

/// GO_AWAY carries the same reason codes as RESET.
public typealias GoAwayReason = ResetReason
