/// Sluice's use of Noise (docs/protocol.md §1): `Noise_IKpsk2_25519_ChaChaPoly_SHA256`, prologue
/// `sluice/1`, two fixed-size messages sent without framing.
///
/// ```
/// message 1, client → relay, 125 bytes: e (32) | encrypted s (48) | encrypted payload (29 + 16)
///            payload: version u8 = 1 | TAI64N timestamp (12) | PSK proof (16)
/// message 2, relay → client,  64 bytes: e (32) | encrypted payload (16 + 16)
///            payload: version u8 = 1 | features u32 | 11 reserved zero bytes
/// ```
///
/// The client side is `SluiceInitiator`, the relay side `SluiceResponder` with a `ReplayGuard`;
/// both end in `TransportKeys` for `RecordSealer` and `RecordOpener`. This type only holds the
/// constants and payload layouts they share.
public enum SluiceHandshake {
    /// The Noise prologue: the ASCII bytes `sluice/1`.
    public static let prologue: [UInt8] = Array("sluice/1".utf8)
    /// The protocol version both payloads carry.
    public static let version: UInt8 = 1
    /// The size of message 1 on the wire.
    public static let message1Length = 125
    /// The size of message 2 on the wire.
    public static let message2Length = 64

    static let pattern = HandshakePattern.IKpsk2
    static let cipher = NoiseCipher.chaChaPoly
    static let message1PayloadLength = 1 + Tai64N.byteCount + pskProofLength
    /// Bytes of the PSK proof in message 1.
    static let pskProofLength = 16
    static let message2PayloadLength = 16

    /// Message 1's payload: the version, the timestamp, the PSK proof.
    static func message1Payload(timestamp: Tai64N, proof: [UInt8]) -> [UInt8] {
        [version] + timestamp.bytes + proof
    }

    /// Proof that the initiator holds the pre-shared key, bound to this handshake's ephemeral key and
    /// timestamp: the first 16 bytes of HMAC-SHA256(psk, "sluice psk proof" || e || timestamp).
    ///
    /// IKpsk2 mixes the PSK in only at message 2, so without this a relay would answer a client that
    /// has an allowed key but the wrong PSK. With it, the relay stays silent to anyone lacking either.
    static func pskProof(psk: PresharedKey, ephemeral: [UInt8], timestamp: Tai64N) -> [UInt8] {
        psk.secret.withUnsafeBytes { key in
            Array(NoiseHash.hmac(key: key, Array("sluice psk proof".utf8), ephemeral, timestamp.bytes).prefix(pskProofLength))
        }
    }

    /// Message 2's payload: the version, the relay's feature bits (big-endian; docs/protocol.md §1.1),
    /// then reserved zero bytes.
    static func message2Payload(features: UInt32) -> [UInt8] {
        [version] + withUnsafeBytes(of: features.bigEndian) { Array($0) }
            + [UInt8](repeating: 0, count: message2PayloadLength - 5)
    }

    /// The feature bits of a decrypted message 2 payload: bytes 1 to 4. A relay that predates them
    /// sends zeros there, which reads as "no features".
    static func features(ofMessage2Payload payload: [UInt8]) -> UInt32 {
        guard payload.count >= 5 else { return 0 }
        return payload[1..<5].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Checks a message's size before any crypto runs, so garbage costs the relay no DH.
    static func checkLength(_ message: [UInt8], expected: Int) throws(HandshakeError) {
        guard message.count == expected else { throw .badLength(expected: expected, actual: message.count) }
    }

    /// The version byte of a decrypted payload.
    static func checkVersion(_ payload: [UInt8]) throws(HandshakeError) {
        guard let first = payload.first else { throw .badLength(expected: 1, actual: 0) }
        guard first == version else { throw .badVersion(first) }
    }
}
