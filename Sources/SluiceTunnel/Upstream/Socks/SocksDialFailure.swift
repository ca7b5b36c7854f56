import SluiceSocks
import SluiceSystem
import SluiceWire

/// Why a connection to the SOCKS5 server did not get as far as the server's reply. All of these
/// are the server's (or the path's) fault, not the destination's: the upstream counts itself down
/// and checks the server again before it carries new flows.
public enum SocksDialFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The TCP connection to the server could not be made (refused, unreachable, EPERM for SO_MARK).
    case connect(server: SocketEndpoint, SystemError)
    /// No answer within the time limit.
    case timedOut(server: SocketEndpoint, seconds: UInt64)
    /// The server closed the connection, or it broke, before its reply.
    case closed(server: SocketEndpoint, SystemError?)
    /// The server does not speak SOCKS5, refuses our authentication, or rejects the credentials.
    case handshake(SocksClientHandshake.Failure)

    public var description: String {
        switch self {
        case .connect(let server, let error) where error.operation.isEmpty:
            return "connect to the SOCKS5 server \(server): \(SystemError.describe(error.code))"
        case .connect(_, let error): return "\(error)"
        case .timedOut(let server, let seconds): return "the SOCKS5 server \(server) did not answer within \(seconds) s"
        case .closed(let server, nil): return "the SOCKS5 server \(server) closed the connection during the handshake"
        case .closed(let server, let error?): return "the connection to the SOCKS5 server \(server) broke during the handshake: \(error)"
        case .handshake(let failure): return "\(failure)"
        }
    }
}
