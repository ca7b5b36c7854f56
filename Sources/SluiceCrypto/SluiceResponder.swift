import CSodium

/// The relay side of a Sluice handshake: checks a client's message 1 and answers with message 2.
///
/// Immutable and `Sendable`: one responder per relay identity, shared by every thread that accepts
/// carriers. Each call to `respond` is an independent handshake.
public struct SluiceResponder: Sendable {
    private let localStatic: PrivateKey
    private let psk: PresharedKey
    /// The feature bits message 2 advertises (docs/protocol.md §1.1).
    public let features: UInt32

    /// - Parameters:
    ///   - localStatic: the relay's static key; clients are configured with its public half.
    ///   - psk: the configured pre-shared key; nil means none, i.e. 32 zero bytes.
    ///   - features: the relay's feature bits, sent in message 2; 0 advertises none.
    public init(localStatic: PrivateKey, psk: PresharedKey? = nil, features: UInt32 = 0) {
        self.localStatic = localStatic
        self.psk = psk ?? .zero
        self.features = features
    }

    /// The relay's public key, for display.
    public var publicKey: PublicKey { localStatic.publicKey }

    /// Reads a client's 125-byte message 1 and, if it is acceptable, writes message 2.
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
        // The length check above fixes the payload at 29 bytes, so the timestamp always decodes.
        guard payload.count == SluiceHandshake.message1PayloadLength,
              let timestamp = Tai64N(bytes: payload[1..<(1 + Tai64N.byteCount)]) else {
            throw .badLength(expected: SluiceHandshake.message1PayloadLength, actual: payload.count)
        }
        let proof = Array(payload.suffix(SluiceHandshake.pskProofLength))
        let expected = SluiceHandshake.pskProof(psk: psk, ephemeral: Array(message1.prefix(32)), timestamp: timestamp)
        guard sodium_memcmp(proof, expected, proof.count) == 0 else { throw .wrongPresharedKey(client) }
        try replayGuard.admit(timestamp, from: client)

        let message2: [UInt8]
        let keys: TransportKeys
        do {
            message2 = try state.writeMessage(payload: SluiceHandshake.message2Payload(features: features))
            keys = try TransportKeys(state)
        } catch {
            throw HandshakeError(error)
        }
        assert(message2.count == SluiceHandshake.message2Length)
        return SluiceResponse(client: client, timestamp: timestamp, message2: message2, keys: keys)
    }
}
