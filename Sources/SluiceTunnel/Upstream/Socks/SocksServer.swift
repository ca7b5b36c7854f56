import SluiceSocks
import SluiceWire

/// A SOCKS5 server as an upstream (`sluice up --upstream socks5://[user:pass@]HOST:PORT`): its
/// endpoint and, when it wants them, RFC 1929 credentials.
public struct SocksServer: Sendable, Equatable, CustomStringConvertible {
    public var endpoint: SocketEndpoint
    public var credentials: SocksCredentials?

    public init(endpoint: SocketEndpoint, credentials: SocksCredentials? = nil) {
        self.endpoint = endpoint
        self.credentials = credentials
    }

    /// `socks5://HOST:PORT`: how logs and `sluice status` name it (never with the password).
    public var description: String { "socks5://\(endpoint)" }
}
