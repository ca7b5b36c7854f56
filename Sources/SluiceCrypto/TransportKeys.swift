/// The two record keys a completed Sluice handshake yields, seen from one end: `sending` seals
/// this end's records (`RecordSealer`), `receiving` opens the peer's (`RecordOpener`).
///
/// On the client, `sending` is Noise's first Split() key (`k_c2r`); on the relay it is the second
/// (`k_r2c`). The handshake hash is the same on both ends and binds the whole transcript; it can
/// serve as a channel-binding value.
public struct TransportKeys: Sendable {
    /// This end's key for the records it writes.
    public let sending: SymmetricKey
    /// This end's key for the records it reads.
    public let receiving: SymmetricKey
    /// Noise's final `h` (32 bytes).
    public let handshakeHash: [UInt8]

    /// Picks the directions out of a completed handshake.
    init(_ state: HandshakeState) throws(CryptoError) {
        let (i2r, r2i) = try state.split()
        guard let toResponder = i2r.key, let toInitiator = r2i.key else {
            preconditionFailure("Split() always yields keyed cipher states")
        }
        sending = state.isInitiator ? toResponder : toInitiator
        receiving = state.isInitiator ? toInitiator : toResponder
        handshakeHash = state.handshakeHash
    }
}
