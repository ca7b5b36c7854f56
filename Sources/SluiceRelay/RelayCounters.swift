import SluiceCarrier
import SluiceMux

/// One established carrier as the relay keeps it: for limits, logs and `sluice status`.
struct CarrierEntry {
    let carrier: Carrier
    let client: ClientID
    /// The address and port the carrier came from.
    let peer: String
    /// When its handshake completed (Unix time, seconds).
    let since: Double
}

/// The relay's counters; every one is shown by `sluice status --relay` (`RelayStatistics`). The
/// front counts connections and handshakes, each worker its streams and datagrams; status adds them.
struct RelayCounters: Sendable {
    var carriersEstablished = 0
    /// Connections closed without a handshake (unknown key, wrong PSK, replay, garbage, timeout).
    var handshakesFailed = 0
    /// Connections closed without a valid PROXY protocol header (`--proxy-protocol`).
    var proxyHeadersInvalid = 0
    /// Connections closed having sent nothing at all: port checks (a balancer's health checks).
    var emptyConnections = 0
    /// Half-open connections closed to stay under --max-pending-handshakes.
    var handshakesDropped = 0
    /// Streams refused, by reason (limit, refused, unreachable, timed out…).
    var streamsRefused: [ResetReason: Int] = [:]
    /// Datagrams the destination policy refused (DATAGRAM_ERROR back, nothing sent).
    var datagramsRefused = 0
    /// Datagrams a destination socket or the carrier could not take (never queued).
    var datagramsDroppedToDestinations = 0
    var datagramsDroppedToClient = 0
}

extension RelayCounters {
    /// Adds `other`'s counts to these (another worker's).
    mutating func add(_ other: RelayCounters) {
        carriersEstablished += other.carriersEstablished
        handshakesFailed += other.handshakesFailed
        proxyHeadersInvalid += other.proxyHeadersInvalid
        emptyConnections += other.emptyConnections
        handshakesDropped += other.handshakesDropped
        streamsRefused.merge(other.streamsRefused, uniquingKeysWith: +)
        datagramsRefused += other.datagramsRefused
        datagramsDroppedToDestinations += other.datagramsDroppedToDestinations
        datagramsDroppedToClient += other.datagramsDroppedToClient
    }
}
