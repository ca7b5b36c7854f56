import SluiceBase64

/// Why a Sluice handshake (docs/protocol.md §1) failed. The relay logs one line with the
/// description and closes without answering; the client logs it and backs off.
public enum HandshakeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A handshake message had the wrong size (message 1 is 125 bytes, message 2 is 64).
    case badLength(expected: Int, actual: Int)
    /// A handshake message did not authenticate: wrong relay key on the client, a different PSK,
    /// altered bytes, or not a Sluice peer at all.
    case decryptFailed
    /// Message 1 came from a well-formed client whose key the relay was not given.
    case unknownClient(PublicKey)
    /// Message 1 carried a timestamp not strictly newer than the newest accepted from this client:
    /// a replayed message, or a client whose clock went back.
    case replayed(client: PublicKey, timestamp: Tai64N)
    /// The client's key is allowed, but its PSK proof does not match the relay's pre-shared key.
    case wrongPresharedKey(PublicKey)
    /// The peer speaks another protocol version.
    case badVersion(UInt8)
    /// The Noise layer refused the exchange for a reason other than the above, for example a
    /// low-order ephemeral key (`CryptoError.weakPublicKey`).
    case noise(CryptoError)

    public var description: String {
        switch self {
        case let .badLength(expected, actual):
            return "handshake message is \(actual) bytes, expected \(expected) — the peer is not a Sluice v1 peer or the stream was cut"
        case .decryptFailed:
            return "handshake did not decrypt — check the relay's public key and that both sides use the same pre-shared key"
        case let .unknownClient(key):
            return "client key \(Self.render(key)) is not allowed — add it to the relay's client list if it should connect"
        case let .replayed(client, timestamp):
            return "handshake from client \(Self.render(client)) with timestamp \(timestamp) is not newer than the last accepted one — a replay, or the client's clock went back"
        case let .wrongPresharedKey(key):
            return "client \(Self.render(key)) does not hold this relay's pre-shared key — give both sides the same --psk file"
        case let .badVersion(version):
            return "peer speaks protocol version \(version), this build speaks \(SluiceHandshake.version) — upgrade the older side"
        case let .noise(error):
            return "handshake failed: \(error)"
        }
    }

    /// Keys in log lines use the same base64 form as configuration files, so they can be grepped.
    private static func render(_ key: PublicKey) -> String {
        Base64.encode(key.bytes)
    }

    /// Maps the Noise layer's errors: authentication failures become `decryptFailed`, the rest stay
    /// visible as `noise(_:)`.
    init(_ error: CryptoError) {
        switch error {
        case .decryptionFailed: self = .decryptFailed
        default: self = .noise(error)
        }
    }
}
