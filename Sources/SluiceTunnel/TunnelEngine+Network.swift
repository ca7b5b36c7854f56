import SluiceLog
import SluiceWire

/// What the host tells the engine about its network: split DNS's queries that go around the tunnel
/// (`DirectDNSPath`), and the redial entry point for when the path to the relay changed.
extension TunnelEngine {
    /// Split DNS: sends a query that `DNSRedirect` left as sent around the tunnel when the host routes
    /// its destination so (`directDNS`). Nil when that does not apply (not DNS, no split, no direct
    /// path, routed into the tunnel): the datagram then goes through the relay like any other;
    /// otherwise whether it was sent.
    func sendAroundTunnel(_ payload: UnsafeRawBufferPointer, from application: SocketEndpoint, to destination: SocketEndpoint) -> Bool? {
        guard dnsRedirect.splits, destination.port == DNSRedirect.port, let directDNS,
              directDNS.bypassesTunnel(destination.address)
        else { return nil }
        return directDNS.send(payload, from: application, to: destination)
    }

    /// The host's path to the relays changed (`reason` says how, such as "network changed"): closes
    /// every carrier whose local address is not the one `sources` names for its relay's address — the
    /// address the host now uses toward that relay — so the flows they carried are reset at once
    /// instead of hanging until the carrier times out, and dials again now, without backoff.
    /// Carriers to a relay `sources` leaves out (no route to it now) stay and wait. Emits
    /// `.reconnecting(reason:)` when no carrier is left up. Returns how many it closed. On the loop
    /// thread.
    @discardableResult
    public func reconnect(reason: String, keepingCarriersFrom sources: [IPAddress: IPAddress]) -> Int {
        let (closed, up) = upstream.pathChanged(reason: reason, sources: sources)
        if closed > 0 && up == 0 && state == .connected {
            change(to: .reconnecting, .reconnecting(reason: reason))
        }
        return closed
    }

    /// `reconnect(reason:keepingCarriersFrom:)` with one source address for every relay (nil:
    /// close every carrier).
    @discardableResult
    public func reconnect(reason: String, keepingCarriersFrom source: IPAddress?) -> Int {
        let keep = source ?? .v4(0)  // 0.0.0.0 is no carrier's local address
        return reconnect(reason: reason, keepingCarriersFrom: Dictionary(configuration.upstreamEndpoints.map { ($0.address, keep) }) { a, _ in a })
    }
}
