/// A snapshot of a running engine: what `sluice status` shows and `--json` prints (the schema is in
/// docs/configuration.md, "sluice status"). Taken on the engine's loop thread by `statistics()`.
public struct TunnelStatistics: Sendable, Codable, Equatable {
    public var state: TunnelState
    /// The relay's endpoint and its public key, base64 as configured; with several relays, their
    /// endpoints and policy ("10.10.0.2:7000, 10.10.0.3:7000 (failover)") and the first one's key;
    /// with a SOCKS5 upstream, `socks5://HOST:PORT` (never the password) and an empty key.
    public var relay: String
    public var relayPublicKey: String
    /// Every configured relay in list order, with its health; empty with a SOCKS5 upstream.
    public var relays: [Relay]
    public var carriers: [CarrierStatistics]
    /// The UDP paths beside the carriers, every relay's together (docs/protocol.md §8; each relay's
    /// own is in `relays`); nil with a SOCKS5 upstream.
    public var udpPath: UDPPathStatistics?
    public var flows: Flows
    public var traffic: Traffic
    /// Payload rates over the last few seconds.
    public var rates: Rates
    /// Every packet, datagram or flow the engine dropped or refused, by reason (kebab-case keys;
    /// reasons with a zero count are left out).
    public var drops: [String: Int]
    /// Counters of things that happened and were not drops (echo replies, resets sent, fragments
    /// reassembled…), by name.
    public var events: [String: Int]

    /// One configured relay.
    public struct Relay: Sendable, Codable, Equatable {
        public enum Health: String, Sendable, Codable, Equatable {
            /// Not tried yet (failover: a relay after the one in use).
            case unknown
            /// A carrier to it completed its handshake, and none went silent since.
            case up
            /// A carrier to it went silent, or it could not be reached while none was up; probed
            /// with the carriers' backoff until a handshake succeeds.
            case down
        }

        public var endpoint: String
        /// Its public key, base64 as configured.
        public var publicKey: String
        public var health: Health
        /// Whether new flows may go to it now: failover's relay in use, or any healthy one with spread.
        public var takesNewFlows: Bool
        /// Carriers to it that are up, and the streams on them.
        public var carriers: Int
        public var streams: Int
        /// This relay's UDP path (docs/protocol.md §8): its carriers' paths and their counters.
        public var udpPath: UDPPathStatistics?

        public init(endpoint: String, publicKey: String, health: Health, takesNewFlows: Bool, carriers: Int, streams: Int,
                    udpPath: UDPPathStatistics? = nil) {
            self.endpoint = endpoint
            self.publicKey = publicKey
            self.health = health
            self.takesNewFlows = takesNewFlows
            self.carriers = carriers
            self.streams = streams
            self.udpPath = udpPath
        }
    }

    public struct Flows: Sendable, Codable, Equatable {
        /// TCP flows the engine carries (accepted by lwIP and joined to a stream).
        public var tcp: Int
        /// TCP flows whose SYN is held while the relay (or SOCKS5 server) connects.
        public var tcpOpening: Int
        /// UDP mappings (application source endpoints with an association).
        public var udpMappings: Int
    }

    public struct Traffic: Sendable, Codable, Equatable {
        /// IP packets (and their bytes) read from the packet flow: what the applications sent.
        public var packetsFromApplications: Int
        public var bytesFromApplications: Int
        /// IP packets (and bytes) written to the packet flow: what the applications were sent.
        public var packetsToApplications: Int
        public var bytesToApplications: Int
        /// TCP payload carried toward the relay (up) and toward the applications (down).
        public var tcpBytesUp: Int
        public var tcpBytesDown: Int
        /// UDP datagrams and payload bytes carried each way.
        public var udpDatagramsUp: Int
        public var udpBytesUp: Int
        public var udpDatagramsDown: Int
        public var udpBytesDown: Int
    }

    public struct Rates: Sendable, Codable, Equatable {
        /// TCP and UDP payload bytes per second, each way, averaged over `seconds`.
        public var bytesPerSecondUp: Double
        public var bytesPerSecondDown: Double
        public var seconds: Double
    }
}

/// One carrier slot of the engine: the carrier it holds now (if any) and its history.
public struct CarrierStatistics: Sendable, Codable, Equatable {
    public enum State: String, Sendable, Codable, Equatable {
        /// Connected and authenticated: carrying streams.
        case up
        /// Dialling: TCP connect and handshake under way.
        case connecting
        /// Waiting to redial after a failure or loss (exponential backoff).
        case waiting
        /// Up, but no longer needed (failover went back to an earlier relay): takes no new flows,
        /// closes once the flows on it ended.
        case draining
    }

    /// 1-based per relay, as in the logs ("carrier #1 to 10.10.0.2:7000").
    public var index: Int
    /// The relay's endpoint; with a SOCKS5 upstream, `socks5://HOST:PORT`.
    public var relay: String
    public var state: State
    /// When the current carrier's handshake completed (Unix time, seconds); nil when not up.
    public var upSince: Double?
    /// When this slot last completed a handshake (Unix time), up or not since.
    public var lastHandshake: Double?
    /// Round-trip time of the last PING answered on this carrier, in microseconds.
    public var rttMicroseconds: Int?
    /// Bytes on the carrier's socket (records, encrypted) and records, each way, of the current carrier.
    public var bytesSent: Int
    public var bytesReceived: Int
    public var recordsSent: Int
    public var recordsReceived: Int
    /// Streams (TCP flows and UDP associations) open on the current carrier.
    public var streams: Int
    /// Times this slot's carrier was lost and established again.
    public var reconnects: Int
    /// Why the last dial failed or the last carrier ended.
    public var lastError: String?
}
