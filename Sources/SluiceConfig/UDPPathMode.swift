/// Whether `sluice up` carries UDP flows on the relay's encrypted UDP path (`--udp-path`,
/// docs/protocol.md §8).
public enum UDPPathMode: String, Sendable, Equatable, CaseIterable {
    /// Where the relay offers one and it validates: datagrams as datagrams; otherwise, and whenever
    /// it stops answering, on the carrier, retried with backoff.
    case auto
    /// Every datagram on the TCP carrier, as relays before the UDP path had it.
    case off
}
