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

    /// `carriers` connections to `target`'s relay, with `mux`'s windows and budget and `keepalive`'s
    /// pings, on `loop`.
    public init(target: CarrierTarget, carriers: Int, mux: MuxSettings = MuxSettings(), keepalive: KeepaliveSettings = .client,
                loop: EventLoop) {
        self.target = target
        pool = CarrierPool(count: carriers, target: target, mux: mux, keepalive: keepalive, loop: loop)
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
    public var drops: [String: Int] { [:] }

    /// The session wants a handler at `open`; the adapter that wraps the stream replaces it before
    /// the loop turn ends, so it never hears a call.
    private let placeholder = NoHandler()
    private final class NoHandler: MuxStreamHandler {
        func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {}
    }

    // MARK: CarrierPoolDelegate

    func pool(_ pool: CarrierPool, carrierUp label: String, upCount: Int) {
        delegate?.upstream(self, pathUp: "carrier \(label)", upCount: upCount)
    }

    func pool(_ pool: CarrierPool, carrierLost label: String, end: CarrierEnd, upCount: Int) {
        delegate?.upstream(self, pathLost: "carrier \(label)", reason: "\(end)", upCount: upCount)
    }

    func pool(_ pool: CarrierPool, dialFailed index: Int, _ failure: DialFailure) {
        delegate?.upstream(self, dialFailed: "carrier #\(index)", reason: "\(failure)")
    }
}
