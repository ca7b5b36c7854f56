/// Which feature bits a carrier uses (docs/protocol.md §1.1): a small state machine, one per session.
/// Loop-confined like its session.
///
/// ```
/// relay → client   message 2: features = R (what the relay supports; an old relay sends 0)
/// client → relay   HELLO(C) as the first frame, only if R ≠ 0 (an old relay closes on an unknown frame)
/// in effect        client: R ∩ C at once; relay: none until HELLO, then R ∩ C
/// ```
///
/// The relay uses a feature only after HELLO arrived, so an old client (which never sends it) gets
/// the base protocol; the client uses one only if the relay advertised it, so an old relay (which
/// advertises nothing) gets the base protocol too. A HELLO the relay did not ask for, a second one,
/// one that is not the first frame, or one sent to the client is a protocol error.
public struct FeatureNegotiation: Sendable {
    public let role: MuxSession.Role
    /// The relay's bits from handshake message 2: on the client what it read, on the relay what it sent.
    public let advertised: CarrierFeatures
    /// This end's own bits: what a client puts into HELLO.
    public let supported: CarrierFeatures
    /// The features in effect now.
    public private(set) var inEffect: CarrierFeatures
    private var helloReceived = false

    public init(role: MuxSession.Role, advertised: CarrierFeatures, supported: CarrierFeatures) {
        self.role = role
        self.advertised = advertised
        self.supported = supported
        inEffect = role == .client ? advertised.intersection(supported) : []
    }

    /// Client side: the bits to send in HELLO as the carrier's first frame, or nil when the relay
    /// advertised nothing (and must not be sent a frame type it may not know).
    public var helloToSend: CarrierFeatures? {
        role == .client && !advertised.isEmpty ? supported : nil
    }

    /// A HELLO carrying `offered` arrived; `isFirstFrame` says whether nothing came before it.
    public mutating func receiveHello(_ offered: CarrierFeatures, isFirstFrame: Bool) throws(MuxError) {
        guard role == .relay else { throw .unexpectedHello(.toClient) }
        guard !advertised.isEmpty else { throw .unexpectedHello(.notAdvertised) }
        guard !helloReceived else { throw .unexpectedHello(.repeated) }
        guard isFirstFrame else { throw .unexpectedHello(.notFirst) }
        helloReceived = true
        inEffect = advertised.intersection(offered).intersection(supported)
    }
}

/// Why a HELLO frame broke the protocol (`MuxError.unexpectedHello`).
public enum HelloProblem: Hashable, Sendable, CustomStringConvertible {
    /// The relay sent HELLO; only the client does.
    case toClient
    /// The relay advertised no features in message 2, so no HELLO was asked for.
    case notAdvertised
    /// A second HELLO on the carrier.
    case repeated
    /// HELLO after other frames; it must be the first.
    case notFirst

    public var description: String {
        switch self {
        case .toClient: return "only the client sends HELLO"
        case .notAdvertised: return "this relay advertised no features, so it asked for no HELLO"
        case .repeated: return "a second HELLO"
        case .notFirst: return "HELLO must be the carrier's first frame"
        }
    }
}

/// Why a UDP_PATH or UDP_PATH_USE frame broke the protocol (`MuxError.unexpectedPathFrame`).
public enum PathFrameProblem: Hashable, Sendable, CustomStringConvertible {
    /// UDP_PATH from the client, or UDP_PATH_USE from the relay.
    case wrongEnd
    /// The UDP path feature is not in effect on this carrier.
    case notNegotiated
    /// A second UDP_PATH on the carrier.
    case repeated
    /// UDP_PATH_USE before the relay offered a path with UDP_PATH.
    case notOffered

    public var description: String {
        switch self {
        case .wrongEnd: return "only the relay sends UDP_PATH, only the client UDP_PATH_USE"
        case .notNegotiated: return "the UDP path feature is not in effect on this carrier"
        case .repeated: return "a second UDP_PATH"
        case .notOffered: return "UDP_PATH_USE before the relay offered a path"
        }
    }
}
