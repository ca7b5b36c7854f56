/// What is wrong with a key's text.
public enum KeyProblem: Sendable, Equatable {
    /// The text is not strict base64; the clause says where.
    case notBase64(String)
    /// It decodes to this many bytes instead of 32.
    case wrongLength(Int)
    /// There is no text at all (an empty file, or an empty flag value).
    case empty
    /// A public key of 32 zero bytes: a degenerate Curve25519 point no peer can have.
    case allZero
}
