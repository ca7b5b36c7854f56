/// The client side of a Sluice handshake: building it writes message 1, `finish` reads message 2.
///
/// The two steps cannot be called out of order, and the value holds the ephemeral private key only
/// until it is dropped. Confined to the thread that runs the handshake; a client opening several
/// carriers builds their initiators one after another so that `Tai64N.next()` orders them.
public struct SluiceInitiator: Sendable {
    /// The 125 bytes to send to the relay, unframed.
    public let message1: [UInt8]
    /// The timestamp message 1 carries.
    public let timestamp: Tai64N
    private let state: HandshakeState

    /// Writes message 1 to the relay whose static key is `relayStatic`.
    ///
    /// - Parameters:
    ///   - psk: the configured pre-shared key; nil means none, i.e. 32 zero bytes.
    ///   - timestamp: defaults to `Tai64N.next()`; tests pass older or newer values.
    /// - Throws: `HandshakeError.noise(.weakPublicKey)` if `relayStatic` is a low-order point.
    public init(localStatic: PrivateKey, relayStatic: PublicKey, psk: PresharedKey? = nil,
                timestamp: Tai64N = .next()) throws(HandshakeError) {
        try self.init(localStatic: localStatic, relayStatic: relayStatic, psk: psk, timestamp: timestamp, ephemeral: nil)
    }

    /// As above with an injected ephemeral key, for deterministic tests only.
    init(localStatic: PrivateKey, relayStatic: PublicKey, psk: PresharedKey?, timestamp: Tai64N,
         ephemeral: PrivateKey?) throws(HandshakeError) {
        let ephemeral = ephemeral ?? PrivateKey.generate()
        let proof = SluiceHandshake.pskProof(psk: psk ?? .zero, ephemeral: ephemeral.publicKey.bytes, timestamp: timestamp)
        do {
            var state = try HandshakeState(
                pattern: SluiceHandshake.pattern, cipher: SluiceHandshake.cipher, initiator: true,
                prologue: SluiceHandshake.prologue, localStatic: localStatic, localEphemeral: ephemeral,
                remoteStatic: relayStatic, psk: psk ?? .zero)
            message1 = try state.writeMessage(payload: SluiceHandshake.message1Payload(timestamp: timestamp, proof: proof))
            self.state = state
        } catch {
            throw HandshakeError(error)
        }
        assert(message1.count == SluiceHandshake.message1Length)
        self.timestamp = timestamp
    }

    /// Reads the relay's 64-byte message 2 and returns the transport keys and the relay's features.
    ///
    /// The reserved bytes of the payload are ignored, so that a later version can use them.
    /// - Throws: `badLength`, `decryptFailed` (wrong relay key or PSK, altered bytes), `badVersion`.
    public func finish(message2: [UInt8]) throws(HandshakeError) -> SluiceAcceptance {
        try SluiceHandshake.checkLength(message2, expected: SluiceHandshake.message2Length)
        var state = self.state
        let payload: [UInt8]
        let keys: TransportKeys
        do {
            payload = try state.readMessage(message2)
            keys = try TransportKeys(state)
        } catch {
            throw HandshakeError(error)
        }
        try SluiceHandshake.checkVersion(payload)
        return SluiceAcceptance(keys: keys, relayFeatures: SluiceHandshake.features(ofMessage2Payload: payload))
    }
}

/// What the client gets from an accepted message 2.
public struct SluiceAcceptance: Sendable {
    /// The client's record keys: `sending` is `k_c2r`, `receiving` is `k_r2c`.
    public let keys: TransportKeys
    /// The feature bits the relay advertised (docs/protocol.md §1.1); 0 from a relay that has none.
    public let relayFeatures: UInt32
}
