/// Noise's HandshakeState (revision 34, §5.3) for `DH_25519`, SHA256 and the patterns of
/// `HandshakePattern`.
///
/// One value per handshake attempt, confined to the thread running it. `writeMessage` and
/// `readMessage` alternate as the pattern dictates; after the last message `isComplete` is true and
/// `split()` yields the transport cipher states. A method that throws leaves the state exactly as it
/// was, so a forged message cannot poison a handshake in progress — though Sluice aborts on any failure.
public struct HandshakeState: Sendable {
    /// Noise caps every message, handshake or transport, at 65535 bytes.
    public static let maxMessageLength = 65535

    /// The pattern being run.
    public let pattern: HandshakePattern
    /// True for the side that writes the first message.
    public let isInitiator: Bool
    /// The full protocol name, e.g. `Noise_IKpsk2_25519_ChaChaPoly_SHA256`.
    public let protocolName: String

    private var symmetric: SymmetricState
    private let localStatic: PrivateKey?
    private var localEphemeral: PrivateKey?
    private var remoteStatic: PublicKey?
    private var remoteEphemeral: PublicKey?
    private let psk: PresharedKey?
    private var messageIndex = 0

    /// `Initialize(...)`: mixes the protocol name, the prologue and the pre-message keys.
    ///
    /// - Parameters:
    ///   - localEphemeral: nil generates a fresh key at the `e` token; tests inject the vectors'
    ///     keys here. Never reuse an ephemeral key outside tests.
    ///   - remoteStatic: required when the peer's static key is a pre-message (IK, NK, KK initiator;
    ///     KK responder); otherwise it is learnt from the handshake.
    ///   - psk: required for `IKpsk2`, ignored otherwise.
    /// - Throws: `missingKey` when the pattern needs a key that was not given, `cipherUnavailable`
    ///   for AES-GCM on a CPU without AES-NI.
    public init(
        pattern: HandshakePattern,
        cipher: NoiseCipher,
        initiator: Bool,
        prologue: [UInt8],
        localStatic: PrivateKey?,
        localEphemeral: PrivateKey? = nil,
        remoteStatic: PublicKey?,
        psk: PresharedKey? = nil
    ) throws(CryptoError) {
        guard cipher.isAvailable else { throw .cipherUnavailable(cipher.name) }
        if pattern.sendsStatic(initiator: initiator), localStatic == nil {
            throw .missingKey("local static key")
        }
        let remotePre = initiator ? pattern.responderPreMessage : pattern.initiatorPreMessage
        if remotePre.contains(.s), remoteStatic == nil { throw .missingKey("remote static key") }
        if pattern.hasPSK, psk == nil { throw .missingKey("pre-shared key") }

        self.pattern = pattern
        self.isInitiator = initiator
        self.protocolName = "Noise_\(pattern.rawValue)_25519_\(cipher.name)_\(NoiseHash.name)"
        self.symmetric = SymmetricState(protocolName: protocolName, cipher: cipher)
        self.localStatic = localStatic
        self.localEphemeral = localEphemeral
        self.remoteStatic = remoteStatic
        self.psk = psk

        symmetric.mixHash(prologue)
        // Pre-messages are hashed initiator's first, whichever side we are (§5.3); the checks above
        // guarantee that the keys they name are present.
        let initiatorStatic = initiator ? localStatic?.publicKey : remoteStatic
        let responderStatic = initiator ? remoteStatic : localStatic?.publicKey
        if pattern.initiatorPreMessage.contains(.s), let key = initiatorStatic { symmetric.mixHash(key.bytes) }
        if pattern.responderPreMessage.contains(.s), let key = responderStatic { symmetric.mixHash(key.bytes) }
    }

    /// True once every message of the pattern was written or read.
    public var isComplete: Bool { messageIndex == pattern.messages.count }

    /// True when the next call must be `writeMessage` (and false when complete).
    public var isWriteTurn: Bool { !isComplete && (messageIndex % 2 == 0) == isInitiator }

    /// `h`: after the handshake, a value both sides share and that binds the whole transcript.
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }

    /// The peer's static key: given at construction, or learnt from a handshake message.
    public var remoteStaticKey: PublicKey? { remoteStatic }

    /// `WriteMessage(payload, message_buffer)`: the next handshake message carrying `payload`.
    public mutating func writeMessage(payload: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard isWriteTurn else { throw .outOfTurn }
        var next = self
        var out: [UInt8] = []
        for token in pattern.messages[messageIndex] {
            switch token {
            case .e:
                let e = next.localEphemeral ?? PrivateKey.generate()
                next.localEphemeral = e
                out += e.publicKey.bytes
                next.symmetric.mixHash(e.publicKey.bytes)
                if pattern.hasPSK { next.symmetric.mixKey(e.publicKey.bytes) }
            case .s:
                guard let s = localStatic else { throw .missingKey("local static key") }
                out += try next.symmetric.encryptAndHash(s.publicKey.bytes)
            default:
                try next.mixDH(token)
            }
        }
        out += try next.symmetric.encryptAndHash(payload)
        guard out.count <= Self.maxMessageLength else { throw .messageTooLong(out.count) }
        next.messageIndex += 1
        self = next
        return out
    }

    /// `ReadMessage(message, payload_buffer)`: consumes the peer's next handshake message and
    /// returns its payload.
    public mutating func readMessage(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard !isComplete, !isWriteTurn else { throw .outOfTurn }
        guard message.count <= Self.maxMessageLength else { throw .messageTooLong(message.count) }
        var next = self
        var offset = 0
        func take(_ count: Int) throws(CryptoError) -> [UInt8] {
            guard message.count - offset >= count else {
                throw .messageTooShort(needed: offset + count, actual: message.count)
            }
            defer { offset += count }
            return Array(message[offset..<offset + count])
        }
        for token in pattern.messages[messageIndex] {
            switch token {
            case .e:
                let re = PublicKey(trusted: try take(PublicKey.byteCount))
                next.remoteEphemeral = re
                next.symmetric.mixHash(re.bytes)
                if pattern.hasPSK { next.symmetric.mixKey(re.bytes) }
            case .s:
                let tag = next.symmetric.cipherState.hasKey ? NoiseCipher.tagLength : 0
                let field = try take(PublicKey.byteCount + tag)
                next.remoteStatic = PublicKey(trusted: try next.symmetric.decryptAndHash(field))
            default:
                try next.mixDH(token)
            }
        }
        let payload = try next.symmetric.decryptAndHash(try take(message.count - offset))
        next.messageIndex += 1
        self = next
        return payload
    }

    /// `Split()`: the transport cipher states, once the handshake is complete.
    public func split() throws(CryptoError) -> (initiatorToResponder: CipherState, responderToInitiator: CipherState) {
        guard isComplete else { throw .handshakeIncomplete }
        let (c1, c2) = symmetric.split()
        return (c1, c2)
    }

    /// The DH tokens and `psk`, identical for reading and writing except for whose key is whose.
    private mutating func mixDH(_ token: HandshakePattern.Token) throws(CryptoError) {
        switch token {
        case .ee:
            try mixKey(Self.dh(localEphemeral, remoteEphemeral))
        case .es:
            try mixKey(isInitiator ? Self.dh(localEphemeral, remoteStatic) : Self.dh(localStatic, remoteEphemeral))
        case .se:
            try mixKey(isInitiator ? Self.dh(localStatic, remoteEphemeral) : Self.dh(localEphemeral, remoteStatic))
        case .ss:
            try mixKey(Self.dh(localStatic, remoteStatic))
        case .psk:
            guard let psk else { throw .missingKey("pre-shared key") }
            psk.secret.withUnsafeBytes { symmetric.mixKeyAndHash($0) }
        case .e, .s:
            preconditionFailure("key tokens are handled by writeMessage/readMessage")
        }
    }

    /// MixKey(DH result); the result's buffer is wiped when it goes.
    private mutating func mixKey(_ secret: SecretBytes) {
        secret.withUnsafeBytes { symmetric.mixKey($0) }
    }

    private static func dh(_ local: PrivateKey?, _ remote: PublicKey?) throws(CryptoError) -> SecretBytes {
        guard let local else { throw .missingKey("local key for a DH token") }
        guard let remote else { throw .missingKey("remote key for a DH token") }
        return try local.sharedSecret(with: remote)
    }
}
