import SluiceCarrier
import SluiceLoop
import SluiceMux
import SluiceWire

/// A set of encrypted carriers to one Sluice relay, kept up with reconnects (`CarrierPool`), that
/// opens streams and UDP associations on the least-loaded one: the engine's default upstream, and
/// what `sluice socks` carries its clients' connections on. Loop-confined.
public final class RelayUpstream: Upstream, CarrierPoolDelegate {
    public unowned var delegate: UpstreamDelegate?
    let pool: CarrierPool
    private let target: CarrierTarget
    private unowned let loop: EventLoop
    /// The carriers' UDP paths (docs/protocol.md §8): counters, log lines, statistics.
    private let pathReport: UDPPathReport

    /// `carriers` connections to `target`'s relay, with `mux`'s windows and budget and `keepalive`'s
    /// pings, on `loop`.
    public init(target: CarrierTarget, carriers: Int, mux: MuxSettings = MuxSettings(), keepalive: KeepaliveSettings = .client,
                loop: EventLoop) {
        self.target = target
        self.loop = loop
        pool = CarrierPool(count: carriers, target: target, mux: mux, keepalive: keepalive, loop: loop)
        pathReport = UDPPathReport(enabled: mux.features.contains(.udpPath), relay: "\(target.relay)")
        pool.delegate = self
    }

    public var name: String { "\(target.relay)" }

    public func start() { pool.start() }
    public func stop() { pool.stop() }

    public func openStream(to destination: Destination, handler: UpstreamStreamHandler) throws(UpstreamUnavailable) -> UpstreamStream {
        guard let carrier = pool.pick() else { throw .notConnected }
        let upstream = RelayStream(carrier.session.open(to: destination, handler: placeholder))
        upstream.handler = handler
        upstream.stream.handler = upstream
        return upstream
    }

    public func openAssociation(to destination: Destination, handler: UpstreamAssociationHandler) throws(UpstreamUnavailable) -> UpstreamAssociation {
        guard let carrier = pool.pick() else { throw .notConnected }
        let association = RelayAssociation(carrier.session.openAssociation(to: destination, handler: placeholder))
        association.handler = handler
        association.stream.handler = association
        return association
    }

    public func pathChanged(reason: String, keepingConnectionsFrom source: IPAddress?) -> (closed: Int, up: Int) {
        let closed = pool.redial(reason: reason) { carrier in
            guard let source, let local = try? carrier.socket.localEndpoint() else { return false }
            return local.address == source
        }
        return (closed, pool.upCount)
    }

    public func statistics() -> [CarrierStatistics] { pool.statistics() }
    public var drops: [String: Int] { pathReport.drops }
    public var udpPath: UDPPathStatistics? { pathReport.statistics(carriersUp: pool.upCount) }

    /// The session wants a handler at `open`; the adapter that wraps the stream replaces it before
    /// the loop turn ends, so it never hears a call.
    private let placeholder = NoHandler()
    private final class NoHandler: MuxStreamHandler {
        func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {}
    }

    // MARK: CarrierPoolDelegate

    func pool(_ pool: CarrierPool, carrierUp carrier: Carrier, upCount: Int) {
        if carrier.pathKeys != nil {
            carrier.onUDPPathOffer = { [unowned self, unowned carrier] index in self.startPath(on: carrier, index: index) }
        } else {
            pathReport.carrierWithoutPath(carrier)
        }
        delegate?.upstream(self, pathUp: "carrier \(carrier.label)", upCount: upCount)
    }

    /// The relay offered `carrier` a UDP path: its socket opens and the first probe goes out.
    private func startPath(on carrier: Carrier, index: UInt32) {
        guard let keys = carrier.pathKeys, !carrier.isClosed else { return }
        let path: UDPPathClient
        do {
            path = try UDPPathClient(carrier: carrier, index: index, keys: keys, relay: target.relay, transport: target.transport,
                                     loop: loop, report: pathReport)
        } catch {
            pathReport.pathFailed(on: carrier, "\(error)")
            return
        }
        carrier.udpPath = path
        carrier.session.datagramPath = path
        pathReport.pathStarted(path, on: carrier)
        path.start()
    }

    func pool(_ pool: CarrierPool, carrierLost label: String, end: CarrierEnd, upCount: Int) {
        delegate?.upstream(self, pathLost: "carrier \(label)", reason: "\(end)", upCount: upCount)
    }

    func pool(_ pool: CarrierPool, dialFailed index: Int, _ failure: DialFailure) {
        delegate?.upstream(self, dialFailed: "carrier #\(index)", reason: "\(failure)")
    }
}
