/// The Noise handshake patterns this module implements (revision 34, §7 and §9 for `psk2`).
///
/// Case names keep the specification's spelling (`IKpsk2`, not `ikPsk2`) because they are pasted
/// into protocol names such as `Noise_IKpsk2_25519_ChaChaPoly_SHA256`. Sluice uses `IKpsk2`; the
/// others come free with the token interpreter and are checked against the same published vectors.
public enum HandshakePattern: String, Sendable, CaseIterable {
    /// `<- s ... -> e, es  <- e, ee`: the initiator knows the responder's key and stays anonymous.
    case NK
    /// `-> s <- s ... -> e, es, ss  <- e, ee, se`: both static keys known in advance.
    case KK
    /// `<- s ... -> e, es, s, ss  <- e, ee, se`: the initiator knows the responder's key and sends
    /// its own, encrypted, in the first message.
    case IK
    /// `-> e  <- e, ee, s, es  -> s, se`: neither side knows the other in advance.
    case XX
    /// IK with a pre-shared key mixed in at the end of the second message (WireGuard's pattern).
    case IKpsk2

    /// A handshake token (§7.1).
    enum Token: Sendable {
        case e, s, ee, es, se, ss, psk
    }

    /// Keys the initiator's pre-message makes known to the responder.
    var initiatorPreMessage: [Token] {
        switch self {
        case .KK: return [.s]
        case .NK, .IK, .XX, .IKpsk2: return []
        }
    }

    /// Keys the responder's pre-message makes known to the initiator.
    var responderPreMessage: [Token] {
        switch self {
        case .NK, .KK, .IK, .IKpsk2: return [.s]
        case .XX: return []
        }
    }

    /// The message patterns in order; even indices are written by the initiator.
    var messages: [[Token]] {
        switch self {
        case .NK: return [[.e, .es], [.e, .ee]]
        case .KK: return [[.e, .es, .ss], [.e, .ee, .se]]
        case .IK: return [[.e, .es, .s, .ss], [.e, .ee, .se]]
        case .XX: return [[.e], [.e, .ee, .s, .es], [.s, .se]]
        case .IKpsk2: return [[.e, .es, .s, .ss], [.e, .ee, .se, .psk]]
        }
    }

    /// Whether a `psk` modifier is present; it also makes every `e` token call MixKey (§9.2).
    var hasPSK: Bool { self == .IKpsk2 }

    /// Whether the given side ever sends its static key (in its pre-message or a message), and so
    /// must be constructed with one.
    func sendsStatic(initiator: Bool) -> Bool {
        let pre = initiator ? initiatorPreMessage : responderPreMessage
        if pre.contains(.s) { return true }
        for (index, tokens) in messages.enumerated() where (index % 2 == 0) == initiator {
            if tokens.contains(.s) { return true }
        }
        return false
    }
}
