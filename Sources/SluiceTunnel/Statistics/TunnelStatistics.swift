/// A snapshot of a running engine: what `sluice status` shows and `--json` prints (the schema is in
/// docs/configuration.md, "sluice status"). Taken on the engine's loop thread by `statistics()`.
public struct TunnelStatistics: Sendable, Codable, Equatable {
    public var state: TunnelState
    /// The relay's endpoint and its public key, base64 as configured; with a SOCKS5 upstream,
    /// `socks5://HOST:PORT` (never the password) and an empty key.
    public var relay: String
    public var relayPublicKey: String
    public var carriers: [CarrierStatistics]
    /// The UDP path beside the carriers (docs/protocol.md §8); nil with a SOCKS5 upstream.
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
    }

    /// 1-based, as in the logs ("carrier #1").
    public var index: Int
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
