/// Why a record could not be sealed or opened. Any of them closes the carrier (docs/protocol.md §2):
/// the record stream has no way to resynchronise after a bad record.
public enum RecordError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A record's tag did not verify: the bytes were altered in transit, or the two ends disagree on
    /// the key (a different handshake, or a rekey on one end only).
    case authenticationFailed
    /// A plaintext length outside 1...65519: given to the sealer by the caller, or decoded by the
    /// opener from a length field (which then means corruption or a peer bug).
    case badLength(Int)
    /// The direction used all 2^63 record numbers it may use; open a new carrier.
    case counterExhausted

    public var description: String {
        switch self {
        case .authenticationFailed:
            return "record failed authentication — the stream was altered or the peers' keys differ; closing the carrier"
        case let .badLength(length):
            return "record length \(length) is outside 1...\(RecordFormat.maxPlaintextLength) — the stream is corrupt or the peer is broken; closing the carrier"
        case .counterExhausted:
            return "the carrier used all 2^63 record numbers of one direction — open a new carrier"
        }
    }
}
