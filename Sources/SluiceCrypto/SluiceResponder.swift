/// The relay side of a Sluice handshake: checks a client's message 1 and answers with message 2.
///
/// Immutable and `Sendable`: one responder per relay identity, shared by every thread that accepts
/// carriers. Each call to `respond` is an independent handshake.
public struct SluiceResponder: Sendable {
    private let localStatic: PrivateKey
    private let psk: PresharedKey

    /// - Parameters:
    ///   - localStatic: the relay's static key; clients are configured with its public half.
    ///   - psk: the configured pre-shared key; nil means none, i.e. 32 zero bytes.
    public init(localStatic: PrivateKey, psk: PresharedKey? = nil) {
        self.localStatic = localStatic
        self.psk = psk ?? .zero
    }

    /// The relay's public key, for display.
    public var publicKey: PublicKey { localStatic.publicKey }

    /// Reads a client's 109-byte message 1 and, if it is acceptable, writes message 2.
    ///
    /// Checks, in order: size; authentication (which also proves the client holds the private half
    /// of the key it claims); `isAllowed(clientKey)`; version; and, through `replayGuard`, that the
    /// timestamp is strictly newer than the newest accepted from that client. Only a message passing
    /// all checks updates the replay table. The PSK is not involved until message 2, so a client
    /// with the wrong PSK passes here and fails in `SluiceInitiator.finish`.
    ///
    /// - Throws: `badLength`, `decryptFailed`, `unknownClient`, `badVersion`, `replayed`.
    ///   Per docs/protocol.md the relay sends nothing back on any of them.
    public func respond(to message1: [UInt8], isAllowed: (PublicKey) -> Bool,
                        replayGuard: ReplayGuard) throws(HandshakeError) -> SluiceResponse {
        try respond(to: message1, isAllowed: isAllowed, replayGuard: replayGuard, ephemeral: nil)
    }

    /// As above with an injected ephemeral key, for deterministic tests only.
    func respond(to message1: [UInt8], isAllowed: (PublicKey) -> Bool, replayGuard: ReplayGuard,
                 ephemeral: PrivateKey?) throws(HandshakeError) -> SluiceResponse {
        try SluiceHandshake.checkLength(message1, expected: SluiceHandshake.message1Length)
        var state: HandshakeState
        let payload: [UInt8]
        do {
            state = try HandshakeState(
                pattern: SluiceHandshake.pattern, cipher: SluiceHandshake.cipher, initiator: false,
                prologue: SluiceHandshake.prologue, localStatic: localStatic, localEphemeral: ephemeral,
                remoteStatic: nil, psk: psk)
            payload = try state.readMessage(message1)
        } catch {
            throw HandshakeError(error)
        }
        guard let client = state.remoteStaticKey else { preconditionFailure("IK message 1 carries s") }
        guard isAllowed(client) else { throw .unknownClient(client) }
        try SluiceHandshake.checkVersion(payload)
        // The length check above fixes the payload at 13 bytes, so the timestamp always decodes.
        guard let timestamp = Tai64N(bytes: payload.dropFirst()) else {
            throw .badLength(expected: SluiceHandshake.message1PayloadLength, actual: payload.count)
        }
        try replayGuard.admit(timestamp, from: client)

        let message2: [UInt8]
        let keys: TransportKeys
        do {
            message2 = try state.writeMessage(payload: SluiceHandshake.message2Payload())
            keys = try TransportKeys(state)
        } catch {
            throw HandshakeError(error)
        }
        assert(message2.count == SluiceHandshake.message2Length)
        return SluiceResponse(client: client, timestamp: timestamp, message2: message2, keys: keys)
    }
}

/// What the relay gets from an accepted message 1.
public struct SluiceResponse: Sendable {
    /// The authenticated client's static public key.
    public let client: PublicKey
    /// The timestamp its message 1 carried (now the newest in the replay guard).
    public let timestamp: Tai64N
    /// The 64 bytes to send back, unframed.
    public let message2: [UInt8]
    /// The relay's record keys: `sending` is `k_r2c`, `receiving` is `k_c2r`.
    public let keys: TransportKeys
}
