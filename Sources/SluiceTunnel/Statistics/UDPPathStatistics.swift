/// The UDP path of a relay upstream as `sluice status` shows it (`TunnelStatistics.udpPath`; schema
/// in docs/configuration.md, "sluice status"; protocol in docs/protocol.md §8).
public struct UDPPathStatistics: Sendable, Codable, Equatable {
    public enum State: String, Sendable, Codable, Equatable {
        /// `--udp-path off`: every datagram rides the carriers.
        case off
        /// No carrier is up yet.
        case waiting
        /// The relay offers no UDP path (it predates it, or has no UDP socket): datagrams ride the carriers.
        case unsupported
        /// Probing a path; meanwhile datagrams ride the carriers.
        case validating
        /// At least one carrier's path carries its datagrams.
        case up
        /// The path did not validate or stopped answering: datagrams ride the carriers, and it is
        /// retried with backoff.
        case fallback

        init(_ monitor: UDPPathMonitor.State) {
            switch monitor {
            case .validating: self = .validating
            case .up: self = .up
            case .down: self = .fallback
            }
        }
    }

    /// One carrier's path.
    public struct Path: Sendable, Codable, Equatable {
        /// The carrier's label, as in the logs ("#1 to 203.0.113.5:7000").
        public var carrier: String
        public var state: State
        /// Round trip of the newest answered probe.
        public var rttMicroseconds: Int?
        /// The largest packet the path carries (the path MTU less IP and UDP headers).
        public var maxPacket: Int
    }

    /// The best state of any carrier's path (up, then validating, then fallback), or why there is none.
    public var state: State
    public var paths: [Path]
    /// Datagrams (and payload bytes) that went on the path, and came back on it.
    public var datagramsSent: Int
    public var bytesSent: Int
    public var datagramsReceived: Int
    public var bytesReceived: Int
    /// Path packets that carried those datagrams each way: fewer than the datagrams where bundles
    /// (docs/protocol.md §8) gathered several into one.
    public var packetsSent: Int
    public var packetsReceived: Int
    /// Datagrams that rode the carrier because the path was not up.
    public var datagramsOverCarrier: Int
    /// Datagrams that rode the carrier because they were larger than the path carries.
    public var tooBigForPath: Int
    public var probesSent: Int
    public var probesAnswered: Int
    /// Times a path became usable, and times one did not validate or stopped answering.
    public var validations: Int
    public var fallbacks: Int
    /// Why the newest fallback happened, while it lasts.
    public var lastFallback: String?
}

extension UDPPathStatistics {
    /// Several relays' paths as one: the best state of any (up, validating, fallback, unsupported,
    /// waiting, off, in that order), every path, the counters added up. Nil for no relay at all.
    init?(combining relays: [UDPPathStatistics]) {
        guard var total = relays.first else { return nil }
        for other in relays.dropFirst() {
            total.paths += other.paths
            total.datagramsSent += other.datagramsSent
            total.bytesSent += other.bytesSent
            total.datagramsReceived += other.datagramsReceived
            total.bytesReceived += other.bytesReceived
            total.packetsSent += other.packetsSent
            total.packetsReceived += other.packetsReceived
            total.datagramsOverCarrier += other.datagramsOverCarrier
            total.tooBigForPath += other.tooBigForPath
            total.probesSent += other.probesSent
            total.probesAnswered += other.probesAnswered
            total.validations += other.validations
            total.fallbacks += other.fallbacks
            total.lastFallback = total.lastFallback ?? other.lastFallback
        }
        let order: [State] = [.up, .validating, .fallback, .unsupported, .waiting, .off]
        total.state = order.first { state in relays.contains { $0.state == state } } ?? total.state
        self = total
    }
}
