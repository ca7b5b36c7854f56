import Glibc
import SluiceCarrier
import SluiceCrypto
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceMux
import SluiceWire

/// A client, by its static public key; in logs and status by the start of its base64, as the
/// operator wrote it in the allow list (`PublicKey.shortBase64`).
struct ClientID: Hashable, CustomStringConvertible {
    let key: PublicKey
    var description: String { key.shortBase64 }
}

/// The relay: accepts carriers, authenticates them (Noise IKpsk2), and dials each stream's destination
/// with a socket of its own (`RelayServer+Streams.swift`), within its destination policy. Everything
/// runs on one event loop. Loop-confined.
///
/// Connections that have not finished their handshake are capped (`maxPendingHandshakes`): a new one
/// past the cap closes the oldest, so a flood of connections that never send message 1 costs a
/// bounded number of descriptors and bytes, while a real client, which sends message 1 at once,
/// completes within a loop turn of connecting.
public final class RelayServer {
    private(set) var settings: RelaySettings
    unowned let loop: EventLoop
    private let listener: Socket
    /// Where carriers connect: `settings.listen` with the port the kernel chose when it was 0.
    public let listeningEndpoint: SocketEndpoint
    private var handshakes: [Int32: InboundHandshake] = [:]
    /// The pending handshakes, oldest first: the one dropped at the cap.
    private let handshakeAge = IdleList<InboundHandshake>()
    private var handshakesDropped = 0
    private var dropReportDue: UInt64 = 0
    /// Established carriers: their client, where they came from and when.
    var carriers: [ObjectIdentifier: CarrierEntry] = [:]
    var counters = RelayCounters()
    var streamsPerClient: [ClientID: Int] = [:]
    let replayGuard = ReplayGuard()
    private(set) var responder: SluiceResponder
    /// Shared read buffer for handshakes and destination sockets (one loop, one read at a time).
    var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    /// What associations send to destinations, sent together after each carrier read's records.
    let outgoingDatagrams: DatagramBatch
    /// The slots every association reads its destinations' datagrams into, a burst per call (loop-confined, so one is enough).
    let datagramReceiver = DatagramReceiver()
    /// The UDP path beside the carriers (docs/protocol.md §8), on the listener's port; nil when that
    /// UDP port could not be bound, and then the relay does not advertise the feature.
    private(set) var udpPath: RelayUDPPath?
    private var carrierCounter = 0
    /// Where `reload()` reads the settings again (the command line and config file the relay
    /// started with); nil when the relay was given settings only.
    private let settingsSource: (() throws -> RelaySettings)?

    var links: [ObjectIdentifier: DestinationLink] = [:]
    /// Streams served by the built-in bench endpoints (`RelayServer+Bench.swift`).
    var benches: [ObjectIdentifier: BenchEndpoint] = [:]
    var associations: [ObjectIdentifier: AssociationLink] = [:]
    /// Each client's associations by last activity: its longest idle goes first at the cap.
    var idleAssociations: [ClientID: IdleList<AssociationLink>] = [:]
    var sweepTimer: LoopTimer?
    var refusals = RefusalLog()
    /// Lines about one client's streams (limit reached, connect refused): one per 10 s.
    var streamLog = RateLimitedLog<ClientID>()
    /// Each client's stream opens (`--max-stream-rate`), shared by its carriers and kept when they
    /// close, so that dialling again buys no fresh burst; one per allowed key at most.
    var openRates: [ClientID: TokenBucket] = [:]

    /// - Parameter settingsSource: reads the settings anew for `reload()` (SIGHUP).
    public init(settings: RelaySettings, loop: EventLoop,
                settingsSource: (() throws -> RelaySettings)? = nil) throws(SystemError) {
        self.settings = settings
        self.loop = loop
        self.settingsSource = settingsSource
        outgoingDatagrams = DatagramBatch(loop: loop)
        responder = Self.responder(for: settings, udpPath: false)
        let listener = try Socket.listen(on: settings.listen)
        self.listener = listener
        listeningEndpoint = try listener.closingOnFailure { () throws(SystemError) in try listener.localEndpoint() }
        try loop.register(fd: listener.fd, events: [.readable]) { [unowned self] _ in self.acceptAll() }
        if settings.mux.features.contains(.udpPath) {
            do {
                udpPath = try RelayUDPPath(listen: listeningEndpoint, relay: self, loop: loop)
            } catch {
                Log.warning("no UDP path: \(error); clients carry UDP flows on their carriers", "relay")
            }
        }
        responder = Self.responder(for: settings, udpPath: udpPath != nil)
        Log.info("relay listening on \(listeningEndpoint)\(udpPath != nil ? " (TCP and UDP)" : ""), "
                 + "\(settings.allowedClients.count) client key(s) allowed", "relay")
    }

    /// Message 2 advertises the settings' features, less the UDP path when its socket is missing.
    static func responder(for settings: RelaySettings, udpPath: Bool) -> SluiceResponder {
        var features = settings.mux.features
        if !udpPath { features.remove(.udpPath) }
        return SluiceResponder(localStatic: settings.privateKey, psk: settings.psk, features: features.rawValue)
    }

    /// Closes the listener and every carrier.
    public func shutdown() {
        loop.deregister(fd: listener.fd)
        listener.close()
        for h in Array(handshakes.values) { h.abandon() }
        for entry in Array(carriers.values) { entry.carrier.close(.localShutdown) }
        carriers.removeAll()
        udpPath?.shutdown()
        udpPath = nil
    }

    /// Connections accepted and not yet through their handshake.
    public var pendingHandshakes: Int { handshakes.count }

    /// Carriers up, per client.
    public var carrierCount: Int { carriers.count }

    private func acceptAll() {
        while true {
            let accepted: IOResult<(Socket, SocketEndpoint?)>
            do { accepted = try listener.accept() } catch {
                Log.warning("\(error)", "relay")
                return
            }
            guard case .done(let (socket, peer)) = accepted else { return }
            if handshakes.count >= settings.maxPendingHandshakes, let oldest = handshakeAge.oldest {
                oldest.abandon()
                noteHandshakeDropped()
            }
            // Carriers carry small frames (OPEN, OPEN_OK, CREDIT) that must not wait for Nagle.
            socket.setNoDelay()
            let peerText = peer.map { "\($0)" } ?? "?"
            let handshake = InboundHandshake(socket: socket, peer: peerText, relay: self, loop: loop)
            handshakes[socket.fd] = handshake
            handshakeAge.touch(handshake)
            handshake.start()
        }
    }

    /// One line when the cap first bites, then at most one per 10 s with the count since.
    private func noteHandshakeDropped() {
        handshakesDropped += 1
        counters.handshakesDropped += 1
        let now = loop.now
        guard now >= dropReportDue else { return }
        Log.info("\(handshakesDropped) connection(s) closed before their handshake: \(settings.maxPendingHandshakes) "
                 + "handshakes were pending (--max-pending-handshakes); the oldest go first", "relay")
        handshakesDropped = 0
        dropReportDue = now + 10_000
    }

    // MARK: called by InboundHandshake

    func handshakeFinished(_ handshake: InboundHandshake) {
        handshakes[handshake.socket.fd] = nil
        handshakeAge.remove(handshake)
    }

    func carrierEstablished(socket: Socket, keys: TransportKeys, client: PublicKey, peer: String) {
        let id = ClientID(key: client)
        carrierCounter += 1
        let label = "#\(carrierCounter) client \(id) from \(peer)"
        let carrier: Carrier
        do {
            carrier = try Carrier(socket: socket, keys: keys, role: .relay, settings: settings.mux,
                                  relayFeatures: CarrierFeatures(rawValue: responder.features), keepalive: .relay,
                                  loop: loop, label: label)
        } catch {
            Log.warning("carrier \(label): \(error)", "relay")
            socket.close()
            return
        }
        carriers[ObjectIdentifier(carrier)] = CarrierEntry(carrier: carrier, client: id, peer: peer, since: WallClock.seconds())
        counters.carriersEstablished += 1
        carrier.onStreamRequest = { [unowned self] stream, destination in self.open(stream, to: destination, client: id) }
        carrier.onRecordsDelivered = { [unowned self] in self.outgoingDatagrams.flush() }
        carrier.readDelay = { [unowned self] in self.openRates[id]?.wait(now: self.loop.now) ?? 0 }
        if udpPath != nil && carrier.pathKeys != nil {
            carrier.onFeaturesNegotiated = { [unowned self, unowned carrier] features in
                if features.contains(.udpPath) { self.udpPath?.open(for: carrier, client: id) }
            }
        }
        carrier.onClose = { [unowned self] carrier, end in
            self.carriers[ObjectIdentifier(carrier)] = nil
            Log.info("carrier \(carrier.label) down: \(end)", "relay")
        }
        Log.info("carrier \(label) up", "relay")
    }

    // MARK: reload (RelayServer+Reload.swift)

    /// Reads the settings again from where the relay got them and applies them (`apply(_:)`); a
    /// configuration that does not load is refused and the running one stays. For SIGHUP and the
    /// control socket.
    @discardableResult
    public func reload() -> RelayReload {
        guard let settingsSource else { return .refused("this relay was started without a configuration to read again") }
        let new: RelaySettings
        do {
            new = try settingsSource()
        } catch {
            Log.error("reload refused, the running configuration stays: \(error)", "relay")
            return .refused("\(error)")
        }
        let report = apply(new)
        Log.info("reloaded: \(report)", "relay")
        return .applied(report)
    }

    /// Replaces the settings a reload may change (`RelayServer+Reload.swift` says which).
    func replaceSettings(_ new: RelaySettings) {
        settings = new
        responder = Self.responder(for: new, udpPath: udpPath != nil)
    }
}
