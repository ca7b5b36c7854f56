import Synchronization

/// The relay's replay protection (docs/protocol.md §1): per client key, the newest message-1
/// timestamp it accepted; a message 1 is admitted only if its timestamp is strictly newer.
///
/// Thread-safe (one lock around the table), so relay threads can share one guard. The table holds
/// one entry per admitted client key, and only allowed keys are admitted, so it is bounded by the
/// configured client list. It lives in memory: after a relay restart, a message 1 recorded before
/// the restart could be replayed once, but it still yields no keys to the attacker.
public final class ReplayGuard: Sendable {
    private let newest = Mutex<[PublicKey: Tai64N]>([:])

    public init() {}

    /// Records `timestamp` as the newest from `client` if it is strictly newer than the previous one;
    /// otherwise throws `replayed` and leaves the table unchanged. Check and update are one step, so
    /// two threads racing with the same message cannot both pass.
    public func admit(_ timestamp: Tai64N, from client: PublicKey) throws(HandshakeError) {
        let admitted = newest.withLock { table -> Bool in
            if let last = table[client], timestamp <= last { return false }
            table[client] = timestamp
            return true
        }
        guard admitted else { throw .replayed(client: client, timestamp: timestamp) }
    }

    /// The newest timestamp admitted from `client`, if any.
    public func newestTimestamp(for client: PublicKey) -> Tai64N? {
        newest.withLock { $0[client] }
    }
}
