import SluiceLog
import SluiceMux
import SluiceWire

/// A destination the relay's policy refuses, and how the refusal travels: with the feature
/// `policyRefusals` in effect on the carrier as RESET(forbidden) / DATAGRAM_ERROR(forbidden), and
/// otherwise as what a client of the base protocol understands, RESET(refused) — its application
/// sees ECONNREFUSED — and DATAGRAM_ERROR(unreachable) (docs/protocol.md §1.1).
struct PolicyRefusal {
    /// What the client asked for: `127.0.0.1:5432`, or `db.example:5432 (127.0.0.1)` for a name.
    let destination: String
    let rule: DestinationPolicy.Rule

    /// The RESET message: `the relay's destination policy refuses 127.0.0.1:5432 (built-in rule …)`.
    var message: String { "the relay's destination policy refuses \(destination) (\(rule))" }

    static func resetReason(on session: MuxSession) -> ResetReason {
        session.features.contains(.policyRefusals) ? .forbidden : .refused
    }

    static func datagramError(on session: MuxSession) -> DatagramErrorCode {
        session.features.contains(.policyRefusals) ? .forbidden : .unreachable
    }
}

/// The relay's `info` line for refusals: once per client, destination and protocol, so a client
/// retrying in a loop fills no disk; at most `capacity` remembered.
struct RefusalLog {
    private struct Key: Hashable {
        let client: ClientID
        let destination: String
        let udp: Bool
    }

    private var logged = OncePerKey<Key>(capacity: 1024)

    mutating func note(_ refusal: PolicyRefusal, client: ClientID, udp: Bool) {
        guard logged.isFirst(Key(client: client, destination: refusal.destination, udp: udp)) else { return }
        Log.info("client \(client): \(udp ? "UDP datagrams" : "stream") to \(refusal.destination) refused: \(refusal.message)", "relay")
    }
}
