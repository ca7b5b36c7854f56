/// The client side of a SOCKS5 handshake as a state machine without I/O: greeting, method
/// selection, RFC 1929 authentication when the server asks for it, then one request and its reply.
/// The owner sends what it is told to send and feeds it what the server sends; bytes past the reply
/// belong to the connection's data and are left unconsumed.
///
/// Each step waits for the server's answer before sending the next message (no pipelining):
/// servers that read the greeting alone and discard the rest of a segment exist, and the round trips
/// are to a server that is usually near.
public struct SocksClientHandshake {
    /// What the owner does next.
    public enum Step: Equatable {
        /// Read more bytes from the server.
        case wait
        /// Write these bytes to the server, then keep feeding it.
        case send([UInt8])
        /// The server answered the request: the handshake is over. A reply whose code is not
        /// `succeeded` is a refusal the owner maps (connection refused, unreachable…).
        case done(SocksReply)
    }

    /// Why the handshake cannot go on.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The server does not speak SOCKS5 as RFC 1928 says.
        case protocolError(SocksError)
        /// X'FF': none of the offered methods is acceptable (it wants a password, and none was
        /// configured; or it refuses the one offered).
        case noAcceptableMethod(offered: [UInt8])
        /// RFC 1929 STATUS other than 0: wrong username or password.
        case authenticationFailed(status: UInt8)

        public var description: String {
            switch self {
            case .protocolError(let e): return "the server broke the SOCKS5 protocol: \(e)"
            case .noAcceptableMethod(let offered):
                return offered == [SocksMethod.noAuthentication]
                    ? "the server requires authentication: give a username and password (socks5://user:pass@host:port)"
                    : "the server accepts none of the offered authentication methods \(offered)"
            case .authenticationFailed(let status): return "the server rejected the username or password (RFC 1929 status \(status))"
            }
        }
    }

    private enum Phase { case greeting, method, authentication, reply, done }

    public let request: SocksRequest
    public let credentials: SocksCredentials?
    private var phase = Phase.greeting

    public init(request: SocksRequest, credentials: SocksCredentials?) {
        self.request = request
        self.credentials = credentials
    }

    /// True once the request went out and its reply is awaited.
    public var isAwaitingReply: Bool { phase == .reply }

    /// The methods offered: no authentication, and username/password when credentials are set (a
    /// server that needs no password may still ask for one).
    public var offeredMethods: [UInt8] {
        credentials == nil ? [SocksMethod.noAuthentication] : [SocksMethod.noAuthentication, SocksMethod.usernamePassword]
    }

    /// The greeting, to send first.
    public mutating func start() -> [UInt8] {
        phase = .method
        return [SocksGreeting.version, UInt8(offeredMethods.count)] + offeredMethods
    }

    /// Consumes what it can of `bytes` (the server's, oldest first) and says what to do; `consumed`
    /// bytes are to be dropped from the front. Call again with the rest after a `send`.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> (consumed: Int, step: Step) {
        do {
            switch phase {
            case .greeting:
                preconditionFailure("start() first")
            case .method:
                guard let selection = try SocksMethodSelection.decode(bytes) else { return (0, .wait) }
                let method = selection.value.method
                if method == SocksMethod.noAcceptable { throw Failure.noAcceptableMethod(offered: offeredMethods) }
                guard offeredMethods.contains(method) else { throw Failure.protocolError(.unofferedMethod(method)) }
                if method == SocksMethod.usernamePassword, let credentials {
                    phase = .authentication
                    let auth = try SocksPasswordRequest(username: credentials.username, password: credentials.password).encoded()
                    return (selection.length, .send(auth))
                }
                phase = .reply
                return (selection.length, .send(try request.encoded()))
            case .authentication:
                guard let reply = try SocksPasswordReply.decode(bytes) else { return (0, .wait) }
                guard reply.value.succeeded else { throw Failure.authenticationFailed(status: reply.value.status) }
                phase = .reply
                return (reply.length, .send(try request.encoded()))
            case .reply:
                guard let reply = try SocksReply.decode(bytes) else { return (0, .wait) }
                phase = .done
                return (reply.length, .done(reply.value))
            case .done:
                return (0, .wait)
            }
        } catch let error as Failure {
            throw error
        } catch let error as SocksError {
            throw .protocolError(error)
        } catch {
            preconditionFailure("unexpected \(error)")
        }
    }
}
