/// The server side of a SOCKS5 handshake as a state machine without I/O (the `sluice socks`
/// front-end): reads the greeting, picks a method, checks RFC 1929 credentials when required, and
/// hands the request to its owner, who answers it with `SocksReply`.
public struct SocksServerHandshake {
    public enum Step: Equatable {
        /// Read more bytes from the client.
        case wait
        /// Write these bytes, then keep feeding the client's.
        case send([UInt8])
        /// Write these bytes and close: no acceptable method, or bad credentials.
        case sendAndClose([UInt8], why: String)
        /// The client's request: connect or associate, then reply.
        case request(SocksRequest)
    }

    private enum Phase { case greeting, authentication, request, done }

    /// Whether a username and password are required, and how to check them.
    private let authenticate: (([UInt8], [UInt8]) -> Bool)?
    private var phase = Phase.greeting
    /// The username the client authenticated as, once it did.
    public private(set) var username: [UInt8]?

    /// `authenticate` nil: no authentication (method X'00' only); otherwise username/password
    /// (X'02') is required and checked by it.
    public init(authenticate: (([UInt8], [UInt8]) -> Bool)?) {
        self.authenticate = authenticate
    }

    public mutating func receive(_ bytes: UnsafeRawBufferPointer) throws(SocksError) -> (consumed: Int, step: Step) {
        switch phase {
        case .greeting:
            guard let greeting = try SocksGreeting.decode(bytes) else { return (0, .wait) }
            let wanted = authenticate == nil ? SocksMethod.noAuthentication : SocksMethod.usernamePassword
            guard greeting.value.methods.contains(wanted) else {
                phase = .done
                let why = authenticate == nil
                    ? "the client offers only methods \(greeting.value.methods), not X'00' (no authentication)"
                    : "authentication is required and the client does not offer username/password (methods \(greeting.value.methods))"
                return (greeting.length, .sendAndClose(SocksMethodSelection(method: SocksMethod.noAcceptable).encoded, why: why))
            }
            phase = authenticate == nil ? .request : .authentication
            return (greeting.length, .send(SocksMethodSelection(method: wanted).encoded))
        case .authentication:
            guard let request = try SocksPasswordRequest.decode(bytes) else { return (0, .wait) }
            guard authenticate?(request.value.username, request.value.password) == true else {
                phase = .done
                let who = String(decoding: request.value.username, as: UTF8.self)
                return (request.length, .sendAndClose(SocksPasswordReply.failure.encoded, why: "wrong username or password for user \(who)"))
            }
            username = request.value.username
            phase = .request
            return (request.length, .send(SocksPasswordReply.success.encoded))
        case .request:
            guard let request = try SocksRequest.decode(bytes) else { return (0, .wait) }
            phase = .done
            return (request.length, .request(request.value))
        case .done:
            return (0, .wait)
        }
    }
}
