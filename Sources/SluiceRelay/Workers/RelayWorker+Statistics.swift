/// What one worker tells the front for `sluice status` (`RelayServer.statistics()`), taken on the
/// worker's loop and read on the front's.
struct WorkerSnapshot: Sendable {
    struct CarrierState: Sendable {
        let client: ClientID
        let peer: String
        let bytesSent: Int
        let bytesReceived: Int
        let since: Double
        /// The client validated the carrier's UDP path and asked for datagrams on it.
        let udpPathInUse: Bool
        /// Bytes its streams are granted beyond their announced windows, out of the workers' pool.
        let windowGrowth: Int
    }

    var carriers: [CarrierState]
    var counters: RelayCounters
    /// Its UDP path's counters; nil without one.
    var udpPath: PathCounters?
}

extension RelayWorker {
    func snapshot() -> WorkerSnapshot {
        WorkerSnapshot(
            carriers: carriers.values.map {
                .init(client: $0.client, peer: $0.peer, bytesSent: $0.carrier.bytesSent,
                      bytesReceived: $0.carrier.bytesReceived, since: $0.since,
                      udpPathInUse: ($0.carrier.udpPath as? PathSession)?.inUse == true,
                      windowGrowth: $0.carrier.session.windowGrowth)
            },
            counters: counters, udpPath: udpPath?.counters)
    }
}
