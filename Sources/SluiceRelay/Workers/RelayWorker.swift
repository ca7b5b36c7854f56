import SluiceCarrier
import SluiceCrypto
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSystem

/// One of the relay's workers: the carriers placed on it and everything their streams hold — the
/// destination sockets (`DestinationLink`), UDP associations (`AssociationLink`), bench endpoints,
/// the carriers' UDP paths (`RelayUDPPath`, with a socket of its own) — all on one event loop, so
/// a carrier, its streams and its path packets never cross threads.
/// Loop-confined: every method runs on `loop`'s thread (other threads reach a worker through
/// `RelayWorkers`, which posts to its loop).
///
/// What is per relay rather than per worker lives elsewhere: the handshakes, the allow-list and the
/// replay rule on the front (`RelayServer`), each client's stream and UDP-mapping counts and stream
/// rate in `ClientLimits`, shared by all workers. Each worker keeps its own copy of the settings,
/// replaced on its loop at a reload (`RelayWorker+Reload.swift`).
final class RelayWorker {
    /// Its place among the relay's workers, 0 for the one on the front's loop.
    let index: Int
    unowned let loop: EventLoop
    /// This worker's copy, replaced on its loop at a reload.
    var settings: RelaySettings { didSet { evictionReason = Self.evictionReason(settings) } }
    /// The RESET message of an association evicted at its client's cap, made once per settings: at
    /// the cap every new association evicts one.
    private(set) var evictionReason: String
    let limits: ClientLimits
    /// The window growth all workers' carriers draw on for their clients' uploads
    /// (`RelaySettings.windowGrowthPoolBytes`).
    let growth: WindowGrowthPool
    /// Carriers on this worker, as the front counts them for placement (`RelayWorkers.place`).
    let load: WorkerLoad
    /// The other workers, to ask one of them to evict a UDP mapping at a client's cap; set once all
    /// workers run, dropped at shutdown.
    var directory: WorkerDirectory?

    /// Established carriers: their client, where they came from and when.
    var carriers: [ObjectIdentifier: CarrierEntry] = [:]
    var counters = RelayCounters()
    /// What associations send to destinations, sent together after each carrier read's records.
    let outgoingDatagrams: DatagramBatch
    /// The slots every association reads its destinations' datagrams into, a burst per call (loop-confined, so one is enough).
    let datagramReceiver = DatagramReceiver()
    var links: [ObjectIdentifier: DestinationLink] = [:]
    /// Links holding bytes of the carrier read being delivered, written when it has been (`DestinationLink.writeHeld`).
    private var linksHoldingBytes: [DestinationLink] = []
    /// Streams served by the built-in bench endpoints (`RelayWorker+Bench.swift`).
    var benches: [ObjectIdentifier: BenchEndpoint] = [:]
    var associations: [ObjectIdentifier: AssociationLink] = [:]
    /// The socket the next association takes, made ahead.
    private(set) lazy var udpSockets = UDPSocketReserve(loop: loop)
    /// Each client's associations on this worker by last activity: its longest idle goes first at the cap.
    var idleAssociations: [ClientID: IdleList<AssociationLink>] = [:]
    var sweepTimer: LoopTimer?
    /// This worker's UDP path; nil when the relay has none (not bound, or the feature is off).
    private(set) var udpPath: RelayUDPPath?
    var refusals = RefusalLog()
    /// Lines about one client's streams (limit reached, connect refused): one per 10 s.
    var streamLog = RateLimitedLog<ClientID>()
    /// Until when (loop clock) a client's carriers here pause reading: the shared bucket of its
    /// stream opens (`ClientLimits.takeOpen`) was in debt when this worker last opened one. A
    /// worker learns of debt another worker ran up at its own next open, so the client's rate over
    /// all workers stays within one open per worker of the bucket's.
    var openDebt: [ClientID: UInt64] = [:]

    /// - Parameter pathSocket: its UDP path socket (`PathSocket.bind`), nil for no UDP path.
    init(index: Int, settings: RelaySettings, limits: ClientLimits, growth: WindowGrowthPool, load: WorkerLoad,
         pathSocket: PathSocket?, loop: EventLoop) {
        self.index = index
        self.settings = settings
        evictionReason = Self.evictionReason(settings)
        self.limits = limits
        self.growth = growth
        self.load = load
        self.loop = loop
        outgoingDatagrams = DatagramBatch(loop: loop)
        loop.busyPollNanoseconds = UInt64(settings.busyPollMicroseconds) * 1_000
        guard let pathSocket else { return }
        do {
            udpPath = try RelayUDPPath(pathSocket, worker: self, loop: loop)
        } catch {
            Log.warning("worker \(index): no UDP path: \(error); its carriers carry UDP flows themselves", "relay")
        }
    }

    /// What a carrier adopted now runs with: the settings' `mux`, drawing on the workers' pool of window
    /// growth, whichever settings a reload brought.
    var carrierSettings: MuxSettings {
        var mux = settings.mux
        mux.windowGrowthPool = growth
        return mux
    }

    /// Takes over a carrier whose handshake the front completed: from here on its socket is read on
    /// this worker's loop.
    func adopt(_ handover: CarrierHandover) {
        let id = ClientID(key: handover.client)
        let carrier: Carrier
        do {
            carrier = try Carrier(socket: handover.socket, keys: handover.keys, role: .relay, settings: carrierSettings,
                                  relayFeatures: handover.features, keepalive: .relay, loop: loop, label: handover.label)
        } catch {
            Log.warning("carrier \(handover.label): \(error)", "relay")
            handover.socket.close()
            load.carrierClosed()
            return
        }
        carriers[ObjectIdentifier(carrier)] = CarrierEntry(carrier: carrier, client: id, peer: handover.peer, since: handover.since)
        carrier.onStreamRequest = { [unowned self] stream, destination in self.open(stream, to: destination, client: id) }
        carrier.onRecordsDelivered = { [unowned self] in self.recordsDelivered() }
        carrier.readDelay = { [unowned self] in self.openDelay(id) }
        if udpPath != nil && carrier.pathKeys != nil {
            carrier.onFeaturesNegotiated = { [unowned self, unowned carrier] features in
                if features.contains(.udpPath) { self.udpPath?.open(for: carrier, client: id) }
            }
        }
        carrier.onClose = { [unowned self] carrier, end in
            self.carriers[ObjectIdentifier(carrier)] = nil
            self.load.carrierClosed()
            Log.info("carrier \(carrier.label) down: \(end)", "relay")
        }
        Log.info("carrier \(handover.label) up" + (directory.map { $0.count > 1 ? " on worker \(index)" : "" } ?? ""), "relay")
    }

    /// `link` holds bytes of the carrier read being delivered: written once its records are.
    func writeWhenDelivered(_ link: DestinationLink) { linksHoldingBytes.append(link) }

    /// A carrier delivered one read's records: what their frames queued goes out, before the carrier
    /// reads again into the buffer the held bytes are in.
    private func recordsDelivered() {
        for link in linksHoldingBytes { link.writeHeld() }
        linksHoldingBytes.removeAll(keepingCapacity: true)
        outgoingDatagrams.flush()
    }

    /// Milliseconds `client`'s carriers on this worker wait before reading on (`openDebt`).
    private func openDelay(_ client: ClientID) -> UInt64 {
        guard let until = openDebt[client] else { return 0 }
        let now = loop.now
        guard now < until else {
            openDebt[client] = nil
            return 0
        }
        return until - now
    }

    /// Closes every carrier and the UDP path's socket (relay shutdown; a second call does nothing).
    func shutdown() {
        for entry in Array(carriers.values) { entry.carrier.close(.localShutdown) }
        carriers.removeAll()
        sweepTimer?.cancel()
        udpSockets.close()
        udpPath?.shutdown()
        udpPath = nil
        directory = nil
    }
}

/// A carrier through its handshake, on its way from the front to the worker that will serve it.
struct CarrierHandover: Sendable {
    let socket: Socket
    let keys: TransportKeys
    let client: PublicKey
    /// Where it came from (address:port), its log label, and when its handshake completed.
    let peer: String
    let label: String
    let since: Double
    /// What message 2 advertised (docs/protocol.md §1.1).
    let features: CarrierFeatures
}
