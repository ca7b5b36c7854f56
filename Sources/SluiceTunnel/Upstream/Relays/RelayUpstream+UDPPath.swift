import SluiceCarrier

/// The carriers' UDP paths (docs/protocol.md §8). A path is made from one carrier's session keys and
/// goes to that carrier's relay, so it belongs to the pool the carrier came from: `pools[i]`'s
/// carriers open their paths to `pools[i].target` and report to `pathReports[i]`. Loop-confined.
extension RelayUpstream {
    /// `carrier` of relay `relay` is up: with the feature in effect it waits for the relay's offer
    /// (`UDP_PATH`), else the relay's report notes a relay without the path.
    func offerPath(on carrier: Carrier, of relay: Int) {
        if carrier.pathKeys != nil {
            carrier.onUDPPathOffer = { [unowned self, unowned carrier] index in self.startPath(on: carrier, of: relay, index: index) }
        } else {
            pathReports[relay].carrierWithoutPath(carrier)
        }
    }

    /// The relay offered `carrier` a UDP path: its socket opens and the first probe goes out.
    private func startPath(on carrier: Carrier, of relay: Int, index: UInt32) {
        guard let keys = carrier.pathKeys, !carrier.isClosed else { return }
        let target = pools[relay].target, report = pathReports[relay]
        let path: UDPPathClient
        do {
            path = try UDPPathClient(carrier: carrier, index: index, keys: keys, relay: target.relay, transport: target.transport,
                                     loop: loop, report: report)
        } catch {
            report.pathFailed(on: carrier, "\(error)")
            return
        }
        carrier.udpPath = path
        carrier.session.datagramPath = path
        report.pathStarted(path, on: carrier)
        path.start()
    }

    /// Every relay's UDP paths together, as `TunnelStatistics.udpPath` shows them (each relay's own
    /// is in `relayStatistics()`).
    public var udpPath: UDPPathStatistics? {
        UDPPathStatistics(combining: pools.indices.map { pathReports[$0].statistics(carriersUp: pools[$0].upCount) })
    }
}
