import SluiceMux

/// A snapshot of a running relay: what `sluice status --relay` shows and `--json` prints (schema in
/// docs/configuration.md, "sluice status"). Taken on the relay's loop thread.
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
    /// A snapshot of the relay's carriers, clients and counters.
    public func statistics() -> RelayStatistics {
        var byClient: [ClientID: RelayStatistics.ClientStatistics] = [:]
        for entry in carriers.values {
            var client = byClient[entry.client] ?? .init(
                publicKey: entry.client.description, addresses: [], carriers: 0, streams: streamsPerClient[entry.client] ?? 0,
                udpMappings: idleAssociations[entry.client]?.count ?? 0,
                udpPaths: udpPath?.pathsInUse(of: entry.client) ?? 0, bytesSent: 0, bytesReceived: 0, lastHandshake: 0)
            client.addresses.append(entry.peer)
            client.carriers += 1
            client.bytesSent += entry.carrier.bytesSent
            client.bytesReceived += entry.carrier.bytesReceived
            client.lastHandshake = max(client.lastHandshake, entry.since)
            byClient[entry.client] = client
        }
        var drops: [String: Int] = [
            "handshake-failed": counters.handshakesFailed,
            "handshake-dropped-at-cap": counters.handshakesDropped,
            "proxy-header-invalid": counters.proxyHeadersInvalid,
            "datagram-refused-by-policy": counters.datagramsRefused,
            "datagram-to-destination": counters.datagramsDroppedToDestinations,
            "datagram-to-client": counters.datagramsDroppedToClient,
        ]
        for (reason, count) in counters.streamsRefused { drops["stream-refused-\(reason.name)"] = count }
        var events = ["carriers-established": counters.carriersEstablished, "connections-without-data": counters.emptyConnections]
        if let path = udpPath?.counters {
            drops.merge([
                "udp-path-malformed": path.malformed,
                "udp-path-unknown-index": path.unknownIndex,
                "udp-path-unauthenticated": path.unauthenticated,
                "udp-path-replayed": path.replayed,
                "udp-path-unknown-stream": path.unknownStream,
                "udp-path-send-failed": path.sendFailed,
            ]) { $0 + $1 }
            events.merge([
                "udp-paths-offered": path.sessions,
                "udp-path-packets-in": path.packetsIn,
                "udp-path-datagrams-in": path.datagramsIn,
                "udp-path-datagrams-out": path.datagramsOut,
                "udp-path-probes-answered": path.probesAnswered,
                "udp-path-roamed": path.roamed,
                "udp-path-too-big-for-path": path.tooBig,
            ]) { $0 + $1 }
        }
        return RelayStatistics(
            listen: "\(listeningEndpoint)", carriers: carriers.count, pendingHandshakes: pendingHandshakes,
            clients: byClient.values.sorted { $0.publicKey < $1.publicKey },
            drops: drops.filter { $0.value != 0 }, events: events.filter { $0.value != 0 })
    }
}
