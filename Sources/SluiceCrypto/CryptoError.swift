/// Errors of the Noise layer and the key types: each renders as a sentence a log line can use.
///
/// Sluice's own handshake maps these to `HandshakeError`, and the record layer has `RecordError`;
/// this enum is what `HandshakeState`, `CipherState` and the key initialisers throw.
public enum CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A key was given with the wrong number of bytes (all Curve25519 keys and PSKs are 32 bytes).
    case invalidKeyLength(expected: Int, actual: Int)
    /// An AEAD tag did not verify: the bytes were tampered with, or the two ends disagree on a key,
    /// the prologue or a pre-shared key.
    case decryptionFailed
    /// A Diffie-Hellman result was all zeros: the peer sent a low-order Curve25519 point, which only
    /// a broken or hostile peer does (libsodium's `crypto_scalarmult` returns -1).
    case weakPublicKey
    /// A cipher state used up its 2^64-1 nonces; the session must be replaced.
    case nonceExhausted
    /// A handshake message ended before the fields its pattern requires.
    case messageTooShort(needed: Int, actual: Int)
    /// A Noise message would exceed the 65535-byte limit of the specification.
    case messageTooLong(Int)
    /// The pattern needs a key the caller did not supply (for example the responder's static key
    /// for an IK initiator).
    case missingKey(String)
    /// `writeMessage` or `readMessage` was called when it was the other side's turn, or after the
    /// handshake completed.
    case outOfTurn
    /// `split()` was called before the last handshake message.
    case handshakeIncomplete
    /// AES-256-GCM was requested but this CPU lacks AES-NI/PCLMUL, so libsodium cannot provide it.
    case cipherUnavailable(String)

    public var description: String {
        switch self {
        case let .invalidKeyLength(expected, actual):
            return "a key must be \(expected) bytes but \(actual) were given — check that the key was copied whole"
        case .decryptionFailed:
            return "decryption failed: the message was altered or the peers disagree on a key, prologue or pre-shared key"
        case .weakPublicKey:
            return "the peer's public key is a low-order Curve25519 point — refusing it (broken or hostile peer)"
        case .nonceExhausted:
            return "the cipher state used all of its nonces — start a new session"
        case let .messageTooShort(needed, actual):
            return "the handshake message is \(actual) bytes but needs at least \(needed) — it was truncated"
        case let .messageTooLong(count):
            return "a Noise message of \(count) bytes exceeds the 65535-byte limit — send a smaller payload"
        case let .missingKey(what):
            return "the handshake pattern needs the \(what), which was not given"
        case .outOfTurn:
            return "handshake message out of turn: it is the other side's turn or the handshake is over"
        case .handshakeIncomplete:
            return "the handshake is not complete yet — transport keys exist only after the last message"
        case let .cipherUnavailable(name):
            return "\(name) is not available on this CPU (libsodium needs AES-NI and PCLMUL) — use ChaChaPoly"
        }
    }
}
