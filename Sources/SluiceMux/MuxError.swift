/// Why a carrier's multiplexing failed. Any of these closes the carrier (and resets its streams).
public enum MuxError: Error, CustomStringConvertible, Sendable {
    /// A frame did not decode.
    case badFrame(String)
    /// The peer sent DATA beyond the window we granted.
    case windowExceeded(stream: UInt32)
    /// A frame named a stream that was never opened, or an OPEN reused an id.
    case unknownStream(UInt32, frame: String)
    /// The peer opened a stream where only we may (a relay opening toward a client).
    case unexpectedOpen(UInt32)
    /// The peer sent GO_AWAY.
    case peerWentAway(ResetReason)
    /// A HELLO frame the feature negotiation does not allow (docs/protocol.md §1.1).
    case unexpectedHello(HelloProblem)
    /// A UDP_PATH or UDP_PATH_USE frame out of turn (docs/protocol.md §8).
    case unexpectedPathFrame(FrameType, PathFrameProblem)

    public var description: String {
        switch self {
        case .badFrame(let why): return "malformed frame from peer: \(why)"
        case .windowExceeded(let s): return "peer sent more data on stream \(s) than its window allows"
        case .unknownStream(let s, let frame): return "peer sent \(frame) for stream \(s), which was never opened"
        case .unexpectedOpen(let s): return "peer tried to open stream \(s), which only the client may do"
        case .peerWentAway(let reason): return "peer went away (\(reason))"
        case .unexpectedHello(let problem): return "peer sent HELLO out of turn: \(problem)"
        case .unexpectedPathFrame(let type, let problem): return "peer sent \(type) out of turn: \(problem)"
        }
    }
}
