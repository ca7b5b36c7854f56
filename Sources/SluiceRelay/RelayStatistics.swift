import SluiceMux

/// A snapshot of a running relay: what `sluice status --relay` shows and `--json` prints (schema in
/// docs/configuration.md, "sluice status"). Taken on the front's loop thread, from every worker.
public struct RelayStatistics: Sendable, Codable, Equatable {
    public var listen: String
    /// Established carriers, and connections still in their handshake.
    public var carriers: Int
    public var pendingHandshakes: Int
    /// One entry per client with a carrier up, by public key.
    public var clients: [ClientStatistics]
    /// Refusals and drops, by reason (kebab-case; zero counts left out).
    public var drops: [String: Int]
    /// Counters of things that happened and were not drops.
    public var events: [String: Int]
    /// Carriers on each worker, worker 0 first (`--workers`); absent from relays before workers.
    public var workers: [Int]?
    /// Bytes the streams of all carriers are granted now beyond their announced windows, and the
    /// pool they draw on (`RelaySettings.windowGrowthPoolBytes`); absent from relays before the pool.
    public var windowGrowth: Int?
    public var windowGrowthPool: Int?

    public struct ClientStatistics: Sendable, Codable, Equatable {
        /// The start of the client's public key in base64, as in the allow list and the logs.
        public var publicKey: String
        /// Where its carriers come from (address:port), one per carrier.
        public var addresses: [String]
        public var carriers: Int
        public var streams: Int
        public var udpMappings: Int
        /// Its carriers whose UDP path it validated and uses (docs/protocol.md §8).
        public var udpPaths: Int
        /// Bytes on its carriers' sockets (encrypted records), toward the client and from it.
        public var bytesSent: Int
        public var bytesReceived: Int
        /// When its most recent carrier completed its handshake (Unix time, seconds).
        public var lastHandshake: Double
        /// Bytes its carriers' streams are granted now beyond their announced windows: its share of
        /// `windowGrowth`. Absent from relays before the pool.
        public var windowGrowth: Int?
    }
}

/// What `sluice status` reads from a running relay (the reply to `status`, one line of JSON).
public struct RelayStatus: Sendable, Codable, Equatable {
    /// "relay": what distinguishes this reply from a tunnel's.
    public var kind = "relay"
    public var pid: Int32
    public var statistics: RelayStatistics

    public init(pid: Int32, statistics: RelayStatistics) {
        self.pid = pid
        self.statistics = statistics
    }
}

extension RelayServer {
    /// A snapshot of the relay's carriers, clients and counters, over all workers (each asked on its
    /// own loop; per-client stream and mapping counts are the relay's, from `ClientLimits`).
    public func statistics() -> RelayStatistics {
        let snapshots = workers.gather { $0.snapshot() }
        let limits = workers.limits
        var byClient: [ClientID: RelayStatistics.ClientStatistics] = [:]
        var total = counters
        var path: PathCounters?
        for snapshot in snapshots {
            total.add(snapshot.counters)
            if let counters = snapshot.udpPath { path = (path ?? .init()) + counters }
            for entry in snapshot.carriers {
                var client = byClient[entry.client] ?? .init(
                    publicKey: entry.client.description, addresses: [], carriers: 0, streams: limits.streams(of: entry.client),
                    udpMappings: limits.udpMappings(of: entry.client),
                    udpPaths: 0, bytesSent: 0, bytesReceived: 0, lastHandshake: 0, windowGrowth: 0)
                client.addresses.append(entry.peer)
                client.carriers += 1
                client.udpPaths += entry.udpPathInUse ? 1 : 0
                client.bytesSent += entry.bytesSent
                client.bytesReceived += entry.bytesReceived
                client.lastHandshake = max(client.lastHandshake, entry.since)
                client.windowGrowth = (client.windowGrowth ?? 0) + entry.windowGrowth
                byClient[entry.client] = client
            }
        }
        var drops: [String: Int] = [
            "handshake-failed": total.handshakesFailed,
            "handshake-dropped-at-cap": total.handshakesDropped,
            "proxy-header-invalid": total.proxyHeadersInvalid,
            "datagram-refused-by-policy": total.datagramsRefused,
            "datagram-to-destination": total.datagramsDroppedToDestinations,
            "datagram-to-client": total.datagramsDroppedToClient,
        ]
        for (reason, count) in total.streamsRefused { drops["stream-refused-\(reason.name)"] = count }
        var events = ["carriers-established": total.carriersEstablished, "connections-without-data": total.emptyConnections]
        path?.add(to: &drops, events: &events)
        var statistics = RelayStatistics(
            listen: "\(listeningEndpoint)", carriers: snapshots.reduce(0) { $0 + $1.carriers.count },
            pendingHandshakes: pendingHandshakes, clients: byClient.values.sorted { $0.publicKey < $1.publicKey },
            drops: drops.filter { $0.value != 0 }, events: events.filter { $0.value != 0 })
        statistics.workers = snapshots.map(\.carriers.count)
        let pool = workers.local.growth
        statistics.windowGrowthPool = pool.bytes
        statistics.windowGrowth = pool.bytes - pool.available
        return statistics
    }
}
