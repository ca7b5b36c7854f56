import SluiceHost
import SluiceLog
import SluiceTunnel
import SluiceWire

/// `sluice up`'s ways onto the host's network besides the TUN: split DNS's direct path for queries
/// left to the host's resolver (`MarkedDNSPath`, given to the engine), and the watch that has the
/// engine redial its carriers when the path to the relay changes (`NetworkWatch`). On the loop thread.
extension UpRunner {
    /// The reason `reconnect` gives the engine, and its events, when the path to the relay changed.
    static let networkChanged = "network changed"

    /// Makes the direct DNS path (with `--dns-domain`) and the network watch. Neither is essential:
    /// without them the tunnel still works, so a failure is a warning. Before `engine.start()`.
    func setUpNetworkPaths() {
        if !host.dnsDomains.isEmpty && !tunnel.dnsResolvers.isEmpty {
            do {
                let path = try MarkedDNSPath(fwmark: host.fwmark, tunName: host.tun)
                directDNS = path
                engine.directDNS = path
            } catch {
                Log.warning("split DNS: no way around the tunnel for other names (\(error)); their queries go through the relay", "client")
            }
        }
        do {
            network = try NetworkWatch(loop: loop, relays: tunnel.upstreamEndpoints.map(\.address), fwmark: host.fwmark, table: host.table,
                                       tunName: host.tun)
        } catch {
            Log.warning("network changes go unnoticed until the carriers time out: \(error)", "client")
        }
    }

    func startNetworkWatch() {
        guard let network else { return }
        network.onChange = { [unowned self] sources in self.pathsToRelaysChanged(sources: sources) }
        do {
            try network.start()
        } catch {
            Log.warning("network changes go unnoticed until the carriers time out: \(error)", "client")
            self.network = nil
        }
    }

    func stopNetworkWatch() {
        network?.stop()
        network = nil
    }

    /// Paths to relays changed (`NetworkWatch`): carriers whose source address is no longer the one
    /// the kernel picks for their relay (`sources`) cannot survive — replies to it do not come back
    /// this way — and the engine redials them at once (`TunnelEngine.reconnect`). Without a route to
    /// a relay, its carriers are not closed: they wait for one, and live on if it comes back
    /// unchanged. Returns the words for the log line.
    func pathsToRelaysChanged(sources: [IPAddress: IPAddress]) -> String {
        directDNS?.routesChanged()
        guard !sources.isEmpty else { return "carriers wait for a route" }
        let closed = engine.reconnect(reason: Self.networkChanged, keepingCarriersFrom: sources)
        return closed == 0 ? "carriers kept" : "reconnecting: \(Self.networkChanged) (\(closed) carrier\(closed == 1 ? "" : "s") closed, their flows reset)"
    }
}
