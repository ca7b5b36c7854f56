import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSocks
import SluiceSystem
import SluiceWire

/// A SOCKS5 server as the engine's upstream (RFC 1928, RFC 1929): each TCP flow is one connection
/// with a CONNECT (`SocksStream`), each UDP mapping one UDP ASSOCIATE (`SocksAssociation`). Destinations
/// go as IP addresses: the engine has nothing else. Loop-confined.
///
/// Up or down: it checks the server at start (`SocksProbe`: connect, greeting, credentials) and
/// carries flows once that passed. When a flow's connection to the server fails for the server's
/// own reasons, before the request went out (refused, unreachable, silent, bad credentials — not a
/// destination the server could not reach, nor a close in answer to the request), it counts itself down, refuses new flows at once, and checks the server again with
/// the carriers' backoff (0.1 s doubling to 10 s) until it answers. `statistics()` shows this as
/// one "carrier": the server.
public final class SocksUpstream: Upstream {
    public unowned var delegate: UpstreamDelegate?
    public let server: SocksServer
    let transport: any CarrierTransport
    unowned let loop: EventLoop
    /// How far a stream reads ahead of the application (the mux stream window's counterpart).
    let window: Int
    /// Where every stream reads and every datagram is assembled: loop-confined, used within one call.
    var scratch = [UInt8](repeating: 0, count: 65536 + 262)

    private enum State { case checking, up, waiting }
    private var state = State.waiting
    private var stopped = false
    private var probe: SocksProbe?
    private var backoff = Backoff()
    private var streams: [ObjectIdentifier: SocksStream] = [:]
    private var associations: [ObjectIdentifier: SocksAssociation] = [:]
    private var udpSupported = true
    private var counters: [String: Int] = [:]
    private var upSince: Double?
    private var lastHandshake: Double?
    private var established = 0
    private var lastError: String?
    /// Bytes on the sockets to the server, TCP and UDP, each way.
    var bytesSent = 0
    var bytesReceived = 0

    public init(server: SocksServer, transport: any CarrierTransport = DirectCarrierTransport(), window: Int = MuxSettings().streamWindow,
                loop: EventLoop) {
        self.server = server
        self.transport = transport
        self.window = window
        self.loop = loop
    }

    public var name: String { server.description }

    public func start() { check() }

    public func stop() {
        stopped = true
        probe?.closeSocket(reset: false)
        probe = nil
        for stream in streams.values { stream.reset() }
        for association in associations.values { association.close() }
        streams.removeAll()
        associations.removeAll()
    }

    public func openStream(to destination: Destination, handler: UpstreamStreamHandler) throws(UpstreamUnavailable) -> UpstreamStream {
        guard state == .up, !stopped else { throw .notConnected }
        do {
            let stream = try SocksStream(upstream: self, destination: Self.address(destination), handler: handler)
            streams[ObjectIdentifier(stream)] = stream
            return stream
        } catch {
            serverFailed(error)
            throw .notConnected
        }
    }

    public func openAssociation(to destination: Destination, handler: UpstreamAssociationHandler) throws(UpstreamUnavailable) -> UpstreamAssociation {
        guard state == .up, !stopped else { throw .notConnected }
        guard udpSupported else { throw .udpUnsupported }
        do {
            let association = try SocksAssociation(upstream: self, handler: handler)
            associations[ObjectIdentifier(association)] = association
            return association
        } catch {
            serverFailed(error)
            throw .notConnected
        }
    }

    public func statistics() -> [CarrierStatistics] {
        let shown: CarrierStatistics.State = state == .up ? .up : (state == .checking ? .connecting : .waiting)
        return [CarrierStatistics(
            index: 1, relay: name, state: shown, upSince: upSince, lastHandshake: lastHandshake, rttMicroseconds: nil,
            bytesSent: bytesSent, bytesReceived: bytesReceived, recordsSent: 0, recordsReceived: 0,
            streams: streams.count + associations.count, reconnects: max(0, established - 1), lastError: lastError)]
    }

    public func relayStatistics() -> [TunnelStatistics.Relay] { [] }

    public var drops: [String: Int] { counters.filter { $0.value > 0 } }

    /// The server, as the delegate's events name it.
    private var path: UpstreamPath { UpstreamPath(relay: name, index: 1, description: "SOCKS5 server \(server.endpoint)") }

    /// Ends the connections from a local address other than the one `sources` names for the server
    /// — their flows are reset — and, if it closed any, checks the server again now.
    public func pathChanged(reason: String, sources: [IPAddress: IPAddress]) -> (closed: Int, up: Int) {
        guard !stopped, let source = sources[server.endpoint.address] else { return (0, state == .up ? 1 : 0) }
        func stale(_ connection: SocksConnection) -> Bool {
            guard let local = try? connection.socket.localEndpoint() else { return true }
            return local.address != source
        }
        var closed = 0
        for stream in streams.values where stale(stream) {
            stream.abandon(because: "reconnecting: \(reason)")
            closed += 1
        }
        for association in associations.values where stale(association) {
            association.abandon()
            closed += 1
        }
        if closed > 0 {
            lastError = "reconnecting: \(reason)"
            if state == .up {
                state = .waiting
                upSince = nil
            }
            backoff.reset()
            if probe == nil { check() }
        }
        return (closed, state == .up ? 1 : 0)
    }

    // MARK: called by the connections

    func streamEnded(_ stream: SocksStream) { streams[ObjectIdentifier(stream)] = nil }
    func associationEnded(_ association: SocksAssociation) { associations[ObjectIdentifier(association)] = nil }

    func countDrop(_ reason: String, _ count: Int) {
        if count > 0 { counters[reason, default: 0] += count }
    }

    /// The server answered UDP ASSOCIATE with "command not supported" (or closed instead): said
    /// once, and UDP is dropped (`udp-upstream-unsupported`) from now on.
    func udpNotSupported(why: String) {
        guard udpSupported else { return }
        udpSupported = false
        Log.warning("the SOCKS5 server \(server.endpoint) does not support UDP ASSOCIATE (\(why)); "
            + "UDP through the tunnel is dropped and counted as udp-upstream-unsupported", "tunnel")
    }

    /// A connection failed for the server's own reasons: down until a check passes again.
    func serverFailed(_ failure: SocksDialFailure) {
        lastError = "\(failure)"
        guard state == .up, !stopped else { return }
        state = .waiting
        upSince = nil
        Log.info("SOCKS5 server \(server.endpoint) down: \(failure); checking it again", "tunnel")
        delegate?.upstream(self, pathLost: path, reason: "\(failure)", upCount: 0)
        backoff.reset()
        retry()
    }

    // MARK: checking the server

    private func check() {
        guard !stopped, probe == nil else { return }
        state = .checking
        do {
            probe = try SocksProbe(upstream: self) { [unowned self] failure in
                self.probe = nil
                self.checked(failure)
            }
        } catch {
            checked(error)
        }
    }

    private func checked(_ failure: SocksDialFailure?) {
        guard !stopped else { return }
        guard let failure else {
            state = .up
            established += 1
            let now = WallClock.seconds()
            upSince = now
            lastHandshake = now
            backoff.reset()
            Log.info("SOCKS5 server \(server.endpoint) answers" + (server.credentials.map { " (\($0))" } ?? ""), "tunnel")
            delegate?.upstream(self, pathUp: path, upCount: 1)
            return
        }
        state = .waiting
        lastError = "\(failure)"
        Log.info("SOCKS5 server \(server.endpoint): \(failure); retrying in \(backoff.text) s", "tunnel")
        delegate?.upstream(self, dialFailed: path, reason: "\(failure)")
        retry()
    }

    private func retry() {
        let delay = backoff.next()
        // Strong capture: the upstream lives as long as the engine, and `stopped` ends the retries.
        loop.schedule(afterMilliseconds: delay) { if self.state == .waiting { self.check() } }
    }

    /// A SOCKS5 address for a mux destination (the same three kinds of host).
    static func address(_ destination: Destination) -> SocksAddress {
        switch destination.host {
        case .ip(let address): return SocksAddress(host: .ip(address), port: destination.port)
        case .domain(let name): return SocksAddress(host: .domain(Array(name.utf8)), port: destination.port)
        }
    }
}

/// The carriers' redial backoff: 0.1 s doubling to 10 s.
struct Backoff {
    private var current = CarrierPool.initialBackoffMilliseconds

    mutating func reset() { current = CarrierPool.initialBackoffMilliseconds }

    mutating func next() -> UInt64 {
        defer { current = min(current * 2, CarrierPool.maxBackoffMilliseconds) }
        return current
    }

    /// The next delay in seconds, as log lines write it.
    var text: String { "\(current / 1000).\(current % 1000 / 100)" }
}
