import CSodium

/// The keys of a carrier's UDP path (docs/protocol.md §8), seen from one end: `sending` seals the
/// packets this end sends, `receiving` opens the peer's.
///
/// Bound to the carrier's session without a second handshake: each is HMAC-SHA256 of that
/// direction's first record key (`TransportKeys`) with the label "sluice udp path" — the way the
/// records' length key is made from the payload key. HMAC is a PRF, so the path keys tell nothing
/// about the record keys, and nobody without the carrier's keys can make or read a path packet.
public struct PathKeys: Sendable {
    public let sending: SymmetricKey
    public let receiving: SymmetricKey

    /// The HMAC message that turns a record key into a path key.
    static let label: StaticString = "sluice udp path"

    /// Derives both directions from the carrier's record keys, before any rekey.
    public init(_ transport: TransportKeys) {
        sending = Self.derive(from: transport.sending)
        receiving = Self.derive(from: transport.receiving)
    }

    /// HMAC-SHA256(k, "sluice udp path").
    static func derive(from key: SymmetricKey) -> SymmetricKey {
        Sodium.ensureInitialized()
        // Written straight into the wiped buffer the new key keeps: no copy of it is left behind.
        let secret = SecretBytes(count: SymmetricKey.byteCount) { out in
            key.withUnsafeBytes { k in
                _ = crypto_auth_hmacsha256(out.baseAddress!.assumingMemoryBound(to: UInt8.self), label.utf8Start,
                                           UInt64(label.utf8CodeUnitCount), k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return SymmetricKey(secret: secret)
    }
}
