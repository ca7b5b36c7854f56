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

/// Settings of a relay, resolved from the command line or a config file.
public struct RelaySettings: Sendable {
    public var listen: SocketEndpoint
    public var privateKey: PrivateKey
    public var allowedClients: Set<PublicKey>
    public var psk: PresharedKey?
    public var maxStreamsPerClient: Int
    public var handshakeTimeoutMilliseconds: UInt64
    /// Idle time after which a UDP association is closed.
    public var udpTimeoutMilliseconds: UInt64 = 60_000
    /// UDP associations one client may hold; the one idle longest goes first.
    public var maxUDPMappingsPerClient = 1024
    /// Whether streams to `bench.sluice.invalid` reach the built-in bench endpoints (`BenchEndpoint`);
    /// `--no-bench` turns them off.
    public var benchEnabled = true
    public var mux = MuxSettings()

    public init(listen: SocketEndpoint, privateKey: PrivateKey, allowedClients: Set<PublicKey>, psk: PresharedKey?,
                maxStreamsPerClient: Int, handshakeTimeoutMilliseconds: UInt64) {
        self.listen = listen
        self.privateKey = privateKey
        self.allowedClients = allowedClients
        self.psk = psk
        self.maxStreamsPerClient = maxStreamsPerClient
        self.handshakeTimeoutMilliseconds = handshakeTimeoutMilliseconds
    }
}

/// The relay: accepts carriers, authenticates them (Noise IKpsk2), and dials each stream's destination
/// with a socket of its own. Everything runs on one event loop. Loop-confined.
public final class RelayServer {
    let settings: RelaySettings
    private unowned let loop: EventLoop
    private let listener: Socket
    /// Where carriers connect: `settings.listen` with the port the kernel chose when it was 0.
    public let listeningEndpoint: SocketEndpoint
    private var handshakes: [Int32: InboundHandshake] = [:]
    /// Established carriers: their client, where they came from and when.
    var carriers: [ObjectIdentifier: CarrierEntry] = [:]
    var counters = RelayCounters()
    private(set) var streamsPerClient: [ClientID: Int] = [:]
    let replayGuard = ReplayGuard()
    let responder: SluiceResponder
    /// Shared read buffer for destination sockets (one loop, one read at a time).
    var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    /// What associations send to destinations, sent together after each carrier read's records.
    let outgoingDatagrams: DatagramBatch
    private var carrierCounter = 0

    public init(settings: RelaySettings, loop: EventLoop) throws(SystemError) {
        self.settings = settings
        self.loop = loop
        outgoingDatagrams = DatagramBatch(loop: loop)
        responder = SluiceResponder(localStatic: settings.privateKey, psk: settings.psk)
        listener = try Socket.listen(on: settings.listen)
        do {
            listeningEndpoint = try listener.localEndpoint()
        } catch {
            listener.close()
            throw error
        }
        try loop.register(fd: listener.fd, events: [.readable]) { [unowned self] _ in self.acceptAll() }
        Log.info("relay listening on \(listeningEndpoint), \(settings.allowedClients.count) client key(s) allowed", "relay")
    }

    /// Closes the listener and every carrier.
    public func shutdown() {
        loop.deregister(fd: listener.fd)
        listener.close()
        for h in handshakes.values { h.abandon() }
        handshakes.removeAll()
        for entry in carriers.values { entry.carrier.close(.localShutdown) }
        carriers.removeAll()
    }

    private func acceptAll() {
        while true {
            let accepted: IOResult<(Socket, SocketEndpoint?)>
            do { accepted = try listener.accept() } catch {
                Log.warning("\(error)", "relay")
                return
            }
            guard case .done(let (socket, peer)) = accepted else { return }
            // Carriers carry small frames (OPEN, OPEN_OK, CREDIT) that must not wait for Nagle.
            socket.setNoDelay()
            let peerText = peer.map { "\($0)" } ?? "?"
            let handshake = InboundHandshake(socket: socket, peer: peerText, relay: self, loop: loop)
            handshakes[socket.fd] = handshake
            handshake.start()
        }
    }

    // MARK: called by InboundHandshake

    func handshakeFinished(_ handshake: InboundHandshake) { handshakes[handshake.socket.fd] = nil }

    /// Connections whose handshake is under way.
    var pendingHandshakes: Int { handshakes.count }

    func carrierEstablished(socket: Socket, keys: TransportKeys, client: PublicKey, peer: String) {
        let id = ClientID(key: client)
        carrierCounter += 1
        let label = "#\(carrierCounter) client \(id) from \(peer)"
        let carrier: Carrier
        do {
            carrier = try Carrier(socket: socket, keys: keys, role: .relay, settings: settings.mux, loop: loop, label: label)
        } catch {
            Log.warning("carrier \(label): \(error)", "relay")
            socket.close()
            return
        }
        carriers[ObjectIdentifier(carrier)] = CarrierEntry(carrier: carrier, client: id, peer: peer, since: WallClock.seconds())
        counters.carriersEstablished += 1
        carrier.onStreamRequest = { [unowned self] stream, destination in self.open(stream, to: destination, client: id) }
        carrier.onRecordsDelivered = { [unowned self] in self.outgoingDatagrams.flush() }
        carrier.onClose = { [unowned self] carrier, end in
            self.carriers[ObjectIdentifier(carrier)] = nil
            Log.info("carrier \(carrier.label) down: \(end)", "relay")
        }
        Log.info("carrier \(label) up", "relay")
    }

    // MARK: streams

    private func open(_ stream: MuxStream, to destination: Destination, client: ClientID) {
        if stream.isAssociation {
            openAssociation(stream, client: client)
            return
        }
        let count = streamsPerClient[client, default: 0]
        guard count < settings.maxStreamsPerClient else {
            Log.info("client \(client): stream to \(destination) refused: limit of \(settings.maxStreamsPerClient) open streams reached", "relay")
            counters.streamsRefused[.limit, default: 0] += 1
            stream.reset(.limit, message: "the relay's limit of \(settings.maxStreamsPerClient) streams per client is reached")
            return
        }
        streamsPerClient[client] = count + 1
        switch BenchEndpoint.route(destination, enabled: settings.benchEnabled) {
        case .destination:
            break
        case .serve(let service):
            startBench(stream, service: service, client: client)
            return
        case .refuse(let reason, let message):
            releaseStreamSlot(client)
            Log.info("client \(client): stream to \(destination) refused: \(message)", "relay")
            counters.streamsRefused[reason, default: 0] += 1
            stream.reset(reason, message: message)
            return
        }
        switch destination.host {
        case .ip(let address):
            startLink(stream, to: SocketEndpoint(address: address, port: destination.port), client: client)
        case .domain(let name):
            let port = destination.port
            let context = LoopBound((self, stream), loop: loop)
            NameResolver.resolve(name) { address in
                context.execute { relay, stream in
                    guard !stream.isClosed else {
                        relay.releaseStreamSlot(client)
                        return
                    }
                    guard let address else {
                        relay.releaseStreamSlot(client)
                        Log.info("client \(client): stream to \(name) refused: the name did not resolve", "relay")
                        relay.counters.streamsRefused[.unreachable, default: 0] += 1
                        stream.reset(.unreachable, message: "\(name) did not resolve")
                        return
                    }
                    relay.startLink(stream, to: SocketEndpoint(address: address, port: port), client: client)
                }
            }
        }
    }

    private var links: [ObjectIdentifier: DestinationLink] = [:]
    /// Streams served by the built-in bench endpoints (`RelayServer+Bench.swift`).
    var benches: [ObjectIdentifier: BenchEndpoint] = [:]
    private var associations: [ObjectIdentifier: AssociationLink] = [:]
    /// Each client's associations by last activity: its longest idle goes first at the cap.
    private(set) var idleAssociations: [ClientID: IdleList<AssociationLink>] = [:]
    private var sweepTimer: LoopTimer?

    /// A UDP association: evicts the client's longest-idle one when it is at its cap.
    private func openAssociation(_ stream: MuxStream, client: ClientID) {
        let idle = idleAssociations[client] ?? IdleList()
        idleAssociations[client] = idle
        if idle.count >= settings.maxUDPMappingsPerClient, let oldest = idle.oldest {
            oldest.expire("evicted: the client holds \(settings.maxUDPMappingsPerClient) UDP mappings")
        }
        let link = AssociationLink(stream: stream, client: client, relay: self, loop: loop)
        associations[ObjectIdentifier(link)] = link
        idle.touch(link)
        link.start()
        scheduleSweep()
    }

    func associationEnded(_ link: AssociationLink) {
        associations[ObjectIdentifier(link)] = nil
        guard let idle = idleAssociations[link.client] else { return }
        idle.remove(link)
        if idle.count == 0 { idleAssociations[link.client] = nil }
    }

    /// A datagram went either way on `link`.
    func associationWasActive(_ link: AssociationLink) {
        idleAssociations[link.client]?.touch(link)
    }

    /// Once a second while associations exist: closes those idle past the UDP timeout.
    private func scheduleSweep() {
        guard sweepTimer?.isPending != true else { return }
        // Strong capture: the relay lives as long as its loop (see EventLoop.schedule on weak captures).
        sweepTimer = loop.schedule(afterMilliseconds: 1000) {
            let now = self.loop.now, timeout = self.settings.udpTimeoutMilliseconds
            // Longest idle first; expiring one removes it from its list (associationEnded).
            for idle in Array(self.idleAssociations.values) {
                while let oldest = idle.oldest, now - oldest.lastActivity >= timeout {
                    oldest.expire("idle for \(timeout / 1000) s")
                }
            }
            if !self.associations.isEmpty { self.scheduleSweep() }
        }
    }

    private func startLink(_ stream: MuxStream, to destination: SocketEndpoint, client: ClientID) {
        let link = DestinationLink(stream: stream, destination: destination, client: client, relay: self, loop: loop)
        links[ObjectIdentifier(link)] = link
        link.start()
    }

    func releaseStreamSlot(_ client: ClientID) {
        streamsPerClient[client, default: 1] -= 1
        if streamsPerClient[client] == 0 { streamsPerClient[client] = nil }
    }

    func linkEnded(_ link: DestinationLink) {
        guard links.removeValue(forKey: ObjectIdentifier(link)) != nil else { return }
        releaseStreamSlot(link.client)
    }
}
