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
