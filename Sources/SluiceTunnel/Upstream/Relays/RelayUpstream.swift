import SluiceCarrier
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceWire

/// Encrypted carriers to one or several Sluice relays, kept up with reconnects (one `CarrierPool`
/// per relay), that open streams and UDP associations on the least-loaded carrier of the relay a
/// new flow goes to: the engine's default upstream, and what `sluice socks` carries its clients'
/// connections on. Loop-confined.
///
/// With several relays, `RelayChoice` decides from what the pools report (carriers up, dials
/// failed, carriers gone silent) which relays are healthy, how many carriers each pool keeps, and
/// where each new flow goes, by the `RelayPolicy`. A relay found down has its carriers closed at once
/// (their flows are reset: the application sees it now, not after a timeout) and new flows go
/// elsewhere from then on. With one relay it is a plain pool, as cheap as one: a new flow asks the
/// pool for its least-loaded carrier and nothing else.
///
/// Each carrier may have a UDP path to its own relay (docs/protocol.md §8, `RelayUpstream+UDPPath`),
/// so each relay has its own `UDPPathReport`: its paths' state, counters and log lines.
public final class RelayUpstream: Upstream, CarrierPoolDelegate {
    public unowned var delegate: UpstreamDelegate?
    let pools: [CarrierPool]
    /// The UDP paths of `pools[i]`'s carriers.
    let pathReports: [UDPPathReport]
    unowned let loop: EventLoop
    private var choice: RelayChoice
    private var stopped = false

    /// `carriers` connections to each relay in use among `targets` (in order of preference), by
    /// `policy`, with `mux`'s windows and budget and `keepalive`'s pings, on `loop`. Each relay
    /// handshakes one carrier at a time (its replay rule wants timestamps in order); different
    /// relays keep separate timestamps, so their dials run side by side. `targets` must name
    /// different relays: the same relay twice would get two dials at once.
    public init(targets: [CarrierTarget], policy: RelayPolicy = .failover, carriers: Int, mux: MuxSettings = MuxSettings(),
                keepalive: KeepaliveSettings = .client, loop: EventLoop) {
        precondition(!targets.isEmpty, "a relay upstream needs a relay")
        pools = targets.map { CarrierPool(target: $0, mux: mux, keepalive: keepalive, loop: loop) }
        let pathEnabled = mux.features.contains(.udpPath)
        pathReports = targets.map { UDPPathReport(enabled: pathEnabled, relay: "\($0.relay)") }
        self.loop = loop
        if !pathEnabled { Log.info("UDP path off (--udp-path off): UDP flows go on the carriers", "client") }
        choice = RelayChoice(relays: targets.count, policy: policy, carriers: carriers)
        for pool in pools { pool.delegate = self }
    }

    /// `carriers` connections to `target`'s relay.
    public convenience init(target: CarrierTarget, carriers: Int, mux: MuxSettings = MuxSettings(), keepalive: KeepaliveSettings = .client,
                            loop: EventLoop) {
        self.init(targets: [target], carriers: carriers, mux: mux, keepalive: keepalive, loop: loop)
    }

    public var name: String {
        pools.count == 1 ? "\(pools[0].target.relay)" : pools.map { "\($0.target.relay)" }.joined(separator: ", ") + " (\(choice.policy.rawValue))"
    }

    public func start() { apply() }

    public func stop() {
        stopped = true
        for pool in pools { pool.stop() }
    }

    public func openStream(to destination: Destination, handler: UpstreamStreamHandler) throws(UpstreamUnavailable) -> UpstreamStream {
        guard let carrier = pick() else { throw .notConnected }
        let upstream = RelayStream(carrier.session.open(to: destination, handler: placeholder))
        upstream.handler = handler
        upstream.stream.handler = upstream
        return upstream
    }

    public func openAssociation(to destination: Destination, handler: UpstreamAssociationHandler) throws(UpstreamUnavailable) -> UpstreamAssociation {
        guard let carrier = pick() else { throw .notConnected }
        let association = RelayAssociation(carrier.session.openAssociation(to: destination, handler: placeholder))
        association.handler = handler
        association.stream.handler = association
        return association
    }

    /// The carrier a new flow goes on: the least-loaded one of the relay the choice names.
    private func pick() -> Carrier? {
        if pools.count == 1 { return pools[0].pick() }
        return relayForNewFlow().flatMap { pools[$0].pick() }
    }

    private func relayForNewFlow() -> Int? {
        let loads = pools.map { pool in
            let load = pool.load
            return RelayChoice.Load(carriers: load.carriers, streams: load.streams)
        }
        return choice.relay(forNewFlowWith: loads)
    }

    public func pathChanged(reason: String, sources: [IPAddress: IPAddress]) -> (closed: Int, up: Int) {
        var closed = 0
        for pool in pools {
            guard let source = sources[pool.target.relay.address] else { continue }
            closed += pool.redial(reason: reason) { carrier in
                guard let local = try? carrier.socket.localEndpoint() else { return false }
                return local.address == source
            }
        }
        return (closed, upCount)
    }

    public func statistics() -> [CarrierStatistics] { pools.flatMap { $0.statistics() } }

    public func relayStatistics() -> [TunnelStatistics.Relay] {
        let next = relayForNewFlow()
        return pools.indices.map { i in
            let load = pools[i].load
            // Spread: every relay a new flow could go to; failover: the one it goes to.
            let takes = choice.policy == .spread ? choice.health[i] != .down && load.carriers > 0 : i == next
            return TunnelStatistics.Relay(endpoint: "\(pools[i].target.relay)", publicKey: pools[i].target.relayPublicKey.base64,
                                          health: choice.health[i], takesNewFlows: takes, carriers: pools[i].upCount, streams: load.streams,
                                          udpPath: pathReports[i].statistics(carriersUp: pools[i].upCount))
        }
    }

    public var drops: [String: Int] { pathReports.reduce(into: [:]) { $0.merge($1.drops) { $0 + $1 } } }

    private var upCount: Int { pools.reduce(0) { $0 + $1.upCount } }

    /// Makes every pool follow the choice's plan: closes the carriers of relays found down, sets how
    /// many carriers each keeps.
    private func apply() {
        guard !stopped else { return }
        for (pool, plan) in zip(pools, choice.plan) {
            pool.setCarriers(plan.carriers)
            if plan.closeCarriers { pool.closeCarriers(reason: "relay \(pool.target.relay) is down") }
        }
    }

    /// A relay's health changed: logs it, tells the delegate and follows the new plan.
    private func healthChanged(_ index: Int, downBecause reason: String?) {
        guard pools.count > 1 else { return }  // one relay: nothing to choose
        let relay = "\(pools[index].target.relay)"
        apply()
        if let reason {
            let next = choice.active.map { "; new flows go to \(pools[$0].target.relay)" } ?? "; no relay is up"
            Log.info("relay \(relay) down: \(reason)\(choice.policy == .failover ? next : "")", "client")
        } else {
            Log.info("relay \(relay) up" + (choice.policy == .failover && choice.active == index ? "; new flows go to it" : ""), "client")
        }
        delegate?.upstream(self, relay: relay, downBecause: reason)
    }

    /// The session wants a handler at `open`; the adapter that wraps the stream replaces it before
    /// the loop turn ends, so it never hears a call.
    private let placeholder = NoHandler()
    private final class NoHandler: MuxStreamHandler {
        func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {}
    }

    // MARK: CarrierPoolDelegate

    func index(of pool: CarrierPool) -> Int { pools.firstIndex { $0 === pool }! }

    private func path(_ pool: CarrierPool, _ index: Int) -> UpstreamPath {
        UpstreamPath(relay: "\(pool.target.relay)", index: index, description: "carrier #\(index) to \(pool.target.relay)")
    }

    func pool(_ pool: CarrierPool, carrierUp carrier: Carrier, index: Int, upCount: Int) {
        let relay = self.index(of: pool)
        offerPath(on: carrier, of: relay)
        if choice.carrierUp(relay) { healthChanged(relay, downBecause: nil) }
        delegate?.upstream(self, pathUp: path(pool, index), upCount: self.upCount)
    }

    func pool(_ pool: CarrierPool, carrierLost label: String, index: Int, end: CarrierEnd, upCount: Int) {
        let relay = self.index(of: pool)
        var silent = false
        if case .pingTimeout = end { silent = true }
        if choice.carrierLost(relay, silent: silent) { healthChanged(relay, downBecause: "carrier \(label): \(end)") }
        delegate?.upstream(self, pathLost: path(pool, index), reason: "\(end)", upCount: self.upCount)
    }

    func pool(_ pool: CarrierPool, dialFailed index: Int, _ failure: DialFailure) {
        let relay = self.index(of: pool)
        if choice.dialFailed(relay, upCarriers: pool.upCount) { healthChanged(relay, downBecause: "\(failure)") }
        delegate?.upstream(self, dialFailed: path(pool, index), reason: "\(failure)")
    }
}
