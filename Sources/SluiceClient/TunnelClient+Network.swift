import SluiceCarrier
import SluiceHost
import SluiceLog
import SluiceWire

/// The client's ways onto the host's network besides the TUN: split DNS's direct path for queries
/// left to the host's resolver, and the watch that redials the carriers when the path to the relay
/// changes. Stack thread only.
extension TunnelClient {
    /// Makes the direct DNS path (with `--dns-domain`) and the network watch. Neither is essential:
    /// without them the tunnel still works, so a failure is a warning.
    func setUpNetworkPaths() {
        if dnsRedirect.splits {
            do {
                directDNS = try MarkedDNSPath(loop: loop, fwmark: settings.fwmark, tunName: tun.name) { [unowned self] payload, source, application in
                    self.emitUDP(payload, from: source, to: application)
                }
            } catch {
                Log.warning("split DNS: no way around the tunnel for other names (\(error)); their queries go through the relay", "client")
            }
        }
        do {
            network = try NetworkWatch(loop: loop, settings: settings, tunName: tun.name)
        } catch {
            Log.warning("network changes go unnoticed until the carriers time out: \(error)", "client")
        }
    }

    func startNetworkWatch() {
        guard let network else { return }
        network.onChange = { [unowned self] new, _ in self.pathToRelayChanged(to: new) }
        do {
            try network.start()
        } catch {
            Log.warning("network changes go unnoticed until the carriers time out: \(error)", "client")
            self.network = nil
        }
    }

    func stopNetworkPaths() {
        network?.stop()
        network = nil
        directDNS?.close()
        directDNS = nil
    }

    /// Split DNS: sends a query that `DNSRedirect` left as sent around the tunnel when the host routes
    /// its destination so. Nil when that does not apply (not DNS, no split, routed into the tunnel):
    /// the datagram then goes through the relay like any other; otherwise whether it was sent.
    func sendAroundTunnel(_ payload: UnsafeRawBufferPointer, from application: SocketEndpoint, to destination: SocketEndpoint) -> Bool? {
        guard dnsRedirect.splits, destination.port == DNSRedirect.port, let directDNS,
              directDNS.bypassesTunnel(destination.address)
        else { return nil }
        return directDNS.send(payload, from: application, to: destination)
    }

    /// The path to the relay changed (`NetworkWatch`): carriers whose source address is no longer the
    /// one the kernel picks for the relay cannot survive — replies to it do not come back this way —
    /// and are redialled at once. Without a route to the relay, nothing is closed: the carriers wait
    /// for one, and live on if it comes back unchanged. Returns the words for the log line.
    func pathToRelayChanged(to new: RouteLookup?) -> String {
        directDNS?.routesChanged()
        guard let new else { return "carriers wait for a route" }
        let closed = reconnect(reason: "network changed") { carrier in
            NetworkWatch.localAddress(of: carrier).map { $0 == new.source } ?? false
        }
        return closed == 0 ? "carriers kept" : "reconnecting: network changed (\(closed) carrier\(closed == 1 ? "" : "s") closed, their flows reset)"
    }

    /// The redial entry point: closes the carriers `survives` rejects (their flows reset at once) and
    /// dials again now. `reason` goes to the log and, where the engine reports events, to them.
    @discardableResult
    func reconnect(reason: String, keeping survives: (Carrier) -> Bool) -> Int {
        pool.redial(reason: reason, keeping: survives)
    }
}
