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
    /// The key's first 8 bytes, which are all a hash needs of a Curve25519 public key: the relay
    /// looks a client up in its limits and idle lists several times per new UDP association, and
    /// hashing the key's 32-byte array costs a `Hasher.combine` per byte.
    private let prefix: UInt64

    init(key: PublicKey) {
        self.key = key
        prefix = key.bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }

    var description: String { key.shortBase64 }

    static func == (a: ClientID, b: ClientID) -> Bool { a.prefix == b.prefix && a.key == b.key }
    func hash(into hasher: inout Hasher) { hasher.combine(prefix) }
}

/// The relay's front: accepts connections, authenticates them (Noise IKpsk2) and hands each carrier
/// to one of its workers (`RelayWorkers`), which dials each stream's destination with a socket of its
/// own (`RelayWorker+Streams.swift`), within the destination policy. The front runs on the loop it
/// is given, as does worker 0; with `settings.workers` > 1 the other workers run on threads of their
/// own. Every handshake is done here, so the allow-list, the replay rule (`replayGuard`) and the
/// pending-handshake cap are the relay's, whatever the number of workers. Loop-confined.
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
    /// Handshake and connection counters (the workers count streams and datagrams).
    var counters = RelayCounters()
    let replayGuard = ReplayGuard()
    private(set) var responder: SluiceResponder
    /// Shared read buffer for handshakes (one loop, one read at a time).
    var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    let workers: RelayWorkers
    private var carrierCounter = 0
    /// Where `reload()` reads the settings again (the command line and config file the relay
    /// started with); nil when the relay was given settings only.
    private let settingsSource: (() throws -> RelaySettings)?

    /// - Parameter settingsSource: reads the settings anew for `reload()` (SIGHUP).
    public init(settings: RelaySettings, loop: EventLoop,
                settingsSource: (() throws -> RelaySettings)? = nil) throws(SystemError) {
        self.settings = settings
        self.loop = loop
        self.settingsSource = settingsSource
        responder = Self.responder(for: settings, udpPath: false)
        let listener = try Socket.listen(on: settings.listen)
        self.listener = listener
        let endpoint = try listener.closingOnFailure { () throws(SystemError) in try listener.localEndpoint() }
        listeningEndpoint = endpoint
        let workers = try listener.closingOnFailure { () throws(SystemError) in
            try RelayWorkers(settings: settings, loop: loop,
                             udpPathOn: settings.mux.features.contains(.udpPath) ? endpoint : nil)
        }
        self.workers = workers
        do {
            try loop.register(fd: listener.fd, events: [.readable]) { [unowned self] _ in self.acceptAll() }
        } catch {
            workers.shutdown()
            listener.close()
            throw error
        }
        responder = Self.responder(for: settings, udpPath: workers.udpPath)
        Log.info("relay listening on \(listeningEndpoint)\(workers.udpPath ? " (TCP and UDP)" : ""), "
                 + "\(settings.allowedClients.count) client key(s) allowed"
                 + (workers.count > 1 ? ", \(workers.count) workers" : ""), "relay")
    }

    /// Message 2 advertises the settings' features, less the UDP path (and the bits that extend it) when its
    /// socket is missing.
    static func responder(for settings: RelaySettings, udpPath: Bool) -> SluiceResponder {
        var features = settings.mux.features
        if !udpPath { features.subtract(.udpPathFamily) }
        return SluiceResponder(localStatic: settings.privateKey, psk: settings.psk, features: features.rawValue)
    }

    /// Closes the listener and every carrier, and stops the workers' threads.
    public func shutdown() {
        loop.deregister(fd: listener.fd)
        listener.close()
        for h in Array(handshakes.values) { h.abandon() }
        workers.shutdown()
    }

    /// Connections accepted and not yet through their handshake.
    public var pendingHandshakes: Int { handshakes.count }

    /// Carriers up, on all workers.
    public var carrierCount: Int { workers.gather { $0.carriers.count }.reduce(0, +) }

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
        carrierCounter += 1
        counters.carriersEstablished += 1
        workers.place(CarrierHandover(
            socket: socket, keys: keys, client: client, peer: peer,
            label: "#\(carrierCounter) client \(ClientID(key: client)) from \(peer)", since: WallClock.seconds(),
            features: CarrierFeatures(rawValue: responder.features)))
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
        responder = Self.responder(for: new, udpPath: workers.udpPath)
    }
}
