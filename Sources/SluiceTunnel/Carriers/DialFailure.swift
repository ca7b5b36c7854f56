import SluiceSystem
import SluiceWire

/// Why a carrier could not be established. Every case renders as a sentence a person can act on;
/// the relay answers a client it refuses with silence, so those cases name the usual causes.
public enum DialFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The socket could not be made or connected (ECONNREFUSED, ENETUNREACH, EPERM for SO_MARK…).
    case connect(relay: SocketEndpoint, SystemError)
    /// The TCP connect did not complete in time.
    case connectTimedOut(relay: SocketEndpoint, seconds: UInt64)
    /// Connected, but no handshake response came in time.
    case silence(seconds: UInt64)
    /// The relay closed the connection without a handshake response.
    case closedWithoutResponse
    /// The handshake response did not verify, or the keys could not be used.
    case handshake(String)

    /// Why a relay might say nothing: it refuses unauthenticated clients silently, and closes after
    /// its own handshake timeout (docs/protocol.md §1).
    public static let silenceHint = "the relay answers a client it refuses with silence — check the relay public key, that this "
        + "client's public key is in the relay's --allow-client list, and that both use the same --psk (or none)"

    public var description: String {
        switch self {
        case .connect(let relay, let error) where error.operation.isEmpty:
            return "connect to \(relay): \(SystemError.describe(error.code))"
        case .connect(_, let error): return "\(error)"
        case .connectTimedOut(let relay, let seconds): return "connect to \(relay) timed out after \(seconds) s"
        case .silence(let seconds): return "no handshake response within \(seconds) s: " + Self.silenceHint
        case .closedWithoutResponse: return "the relay closed the connection without a handshake response: " + Self.silenceHint
        case .handshake(let why): return "handshake response rejected: \(why)"
        }
    }
}
