import CSodium
import SluiceCrypto
import SluiceLoop
import SluiceMux
import SluiceProxy
import SluiceRelay
import SluiceSocks
import SluiceTestSupport
import SluiceTunnel
import SluiceWire
import XCTest

/// A whole tunnel in one process, on one event loop, without root: the engine behind a
/// `MemoryPacketFlow`, a real `RelayServer` on loopback that it dials through real carriers, and
/// test servers on this host's own address that the relay connects to. The test plays the
/// applications: it writes their packets into the flow (`AppTCP`, `sendUDP`) and reads what the
/// engine writes back. (wireguard-go tests two devices in one process the same way.)
///
/// With `relays: n`, the engine's upstream is n relays of their own keys (the first is `relay`, all
/// are `relayServers`), used by its configuration's `relayPolicy`.
///
/// With `socks`, the engine's upstream is a SOCKS5 server instead: Sluice's own front-end
/// (`ProxyServer`, the server side of SluiceSocks) on loopback, whose connections in turn go to the
/// relay through carriers of its own — so the engine's `SocksUpstream` meets a real SOCKS5 server.
///
/// Only one may exist at a time: lwIP, under the engine, keeps global state.
final class EngineHarness: TunnelEventDelegate {
    /// Where the engine's flows go.
    enum Upstream {
        case relay
        /// Several relays, each with a key of its own, in this order.
        case relays(Int)
        /// A SOCKS5 server requiring `users` (none: no authentication), reached with `credentials`.
        case socks(users: ProxyUsers = ProxyUsers([]), credentials: SocksCredentials? = nil)
    }

    let loop: EventLoop
    let flow: MemoryPacketFlow
    let engine: TunnelEngine
    /// The relays, in the configuration's order (one unless `.relays(n)`).
    private(set) var relayServers: [RelayServer]
    var relay: RelayServer { relayServers[0] }
    private var relayKeys: [PrivateKey]
    var relayKey: PrivateKey { relayKeys[0] }
    let clientKey = PrivateKey.generate()
    private let relayFeatures: CarrierFeatures
    /// The host's own address, where test servers listen (see `HostAddress`).
    let host: IPAddress
    /// Every event the engine emitted, in order.
    private(set) var events: [TunnelEvent] = []
    /// Datagrams the engine wrote toward the applications: (source, destination, payload).
    private(set) var datagrams: [(from: SocketEndpoint, to: SocketEndpoint, payload: [UInt8])] = []
    /// ICMP and ICMPv6 packets the engine wrote, whole.
    private(set) var icmp: [[UInt8]] = []
    private var connections: [String: AppTCP] = [:]
    private var nextPort: UInt16 = 40_000
    private var relayPorts: [UInt16]
    /// With `.socks`: the SOCKS5 server and its carriers to the relay.
    private(set) var socksServer: ProxyServer?
    private var socksCarriers: RelayUpstream?
    private var socksUsers = ProxyUsers([])
    private var socksPort: UInt16 = 0

    /// - Parameters:
    ///   - offloads: the flow's offloads; with segmentation the engine writes super-packets.
    ///   - configure: changes to the engine's configuration (the relay and keys are set already).
    ///   - directDNS: split DNS's way around the tunnel, given to the engine before it starts.
    ///   - transport: makes the engine's carrier and UDP path sockets.
    ///   - relayFeatures: what the relays advertise (a relay that predates a feature: less).
    init(offloads: PacketOffloads = [], upstream: Upstream = .relay, directDNS: DirectDNSPath? = nil,
         transport: any CarrierTransport = DirectCarrierTransport(), relayFeatures: CarrierFeatures = .implemented,
         configure: (inout TunnelConfiguration) -> Void = { _ in }) throws {
        guard let host = HostAddress.forTests else { throw XCTSkip("this host has no non-loopback IPv4 address for test servers, and none may be added") }
        self.host = host
        loop = try EventLoop()
        var count = 1
        if case .relays(let n) = upstream { count = n }
        relayKeys = (0..<count).map { _ in PrivateKey.generate() }
        self.relayFeatures = relayFeatures
        relayServers = []
        for key in relayKeys {
            relayServers.append(try Self.makeRelay(port: 0, key: key, client: clientKey.publicKey, features: relayFeatures, loop: loop))
        }
        relayPorts = relayServers.map(\.listeningEndpoint.port)
        let relays = zip(relayServers, relayKeys).map { TunnelConfiguration.Relay(endpoint: $0.listeningEndpoint, publicKey: $1.publicKey) }
        var configuration = TunnelConfiguration(relays: relays, privateKey: clientKey)
        if case .socks(let users, let credentials) = upstream {
            socksUsers = users
            let (server, carriers) = try Self.makeSocksServer(port: 0, relay: relayServers[0].listeningEndpoint, relayKey: relayKeys[0].publicKey,
                                                              clientKey: clientKey, users: users, loop: loop)
            (socksServer, socksCarriers) = (server, carriers)
            socksPort = server.listeningEndpoint.port
            configuration = TunnelConfiguration(socks: SocksServer(endpoint: server.listeningEndpoint, credentials: credentials))
        }
        configuration.carriers = 1
        configure(&configuration)
        flow = MemoryPacketFlow(mtu: configuration.mtu, offloads: offloads)
        engine = try TunnelEngine(configuration: configuration, packetFlow: flow, transport: transport, loop: loop)
        engine.delegate = self
        engine.directDNS = directDNS
        flow.output = { [unowned self] in self.received($0) }
        try engine.start()
    }

    private static func makeRelay(port: UInt16, key: PrivateKey, client: PublicKey, features: CarrierFeatures, loop: EventLoop) throws -> RelayServer {
        var settings = RelaySettings(listen: SocketEndpoint(address: IPAddress("127.0.0.1")!, port: port), privateKey: key,
                                     allowedClients: [client], psk: nil, maxStreamsPerClient: 1024, handshakeTimeoutMilliseconds: 5_000)
        settings.mux.features = features
        return try RelayServer(settings: settings, loop: loop)
    }

    /// Stops the `index`th relay (its carriers end) and, with `restart`, starts a new one on the same port.
    func killRelay(_ index: Int = 0, restart: Bool) throws {
        relayServers[index].shutdown()
        if restart {
            relayServers[index] = try Self.makeRelay(port: relayPorts[index], key: relayKeys[index], client: clientKey.publicKey, features: relayFeatures, loop: loop)
        }
    }

    /// Starts the `index`th relay again after `killRelay(index, restart: false)`.
    func restartRelay(_ index: Int) throws {
        relayServers[index] = try Self.makeRelay(port: relayPorts[index], key: relayKeys[index], client: clientKey.publicKey, features: relayFeatures, loop: loop)
    }

    /// Streams the `index`th relay has open for the client.
    func relayStreams(_ index: Int) -> Int { relayServers[index].statistics().clients.first?.streams ?? 0 }

    /// The SOCKS5 server: Sluice's front-end on loopback, with one carrier to the relay.
    private static func makeSocksServer(port: UInt16, relay: SocketEndpoint, relayKey: PublicKey, clientKey: PrivateKey,
                                        users: ProxyUsers, loop: EventLoop) throws -> (ProxyServer, RelayUpstream) {
        let target = CarrierTarget(relay: relay, relayPublicKey: relayKey, privateKey: clientKey, psk: nil)
        let carriers = RelayUpstream(target: target, carriers: 1, loop: loop)
        let server = try ProxyServer(listen: SocketEndpoint(address: IPAddress("127.0.0.1")!, port: port), upstream: carriers,
                                     users: users, loop: loop)
        carriers.start()
        return (server, carriers)
    }

    /// Stops the SOCKS5 server (its connections end), and with `restart` starts a new one on its port.
    func killSocksServer(restart: Bool) throws {
        socksServer?.shutdown()
        socksCarriers?.stop()
        socksServer = nil
        if restart {
            (socksServer, socksCarriers) = try Self.makeSocksServer(port: socksPort, relay: relay.listeningEndpoint, relayKey: relayKey.publicKey,
                                                                    clientKey: clientKey, users: socksUsers, loop: loop)
        }
    }

    func shutdown() {
        engine.stop()
        socksServer?.shutdown()
        socksCarriers?.stop()
        for relay in relayServers { relay.shutdown() }
    }

    func tunnel(_ engine: TunnelEngine, didEmit event: TunnelEvent) { events.append(event) }

    // MARK: driving the loop

    /// Runs the loop until `condition` holds (checked at the end of every turn) or the time is up;
    /// returns whether it held.
    @discardableResult
    func run(until condition: @escaping () -> Bool, timeoutMilliseconds: UInt64 = 10_000) -> Bool {
        if condition() { return true }
        var met = false
        let loop = self.loop
        let hook = loop.addEndOfTurnHook {
            if condition() {
                met = true
                loop.stop()
            }
        }
        let timer = loop.schedule(afterMilliseconds: timeoutMilliseconds) { loop.stop() }
        loop.run()
        loop.removeEndOfTurnHook(hook)
        timer.cancel()
        return met
    }

    /// Runs until the engine is connected.
    func waitConnected(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(run(until: { [unowned self] in engine.state == .connected }), "no carrier came up", file: file, line: line)
    }

    // MARK: applications

    /// A new TCP connection from a fresh application port to `destination`, SYN sent; its segments
    /// carry `segmentSize` bytes (super-packets) where given, else the engine's MSS.
    func connectTCP(to destination: SocketEndpoint, segmentSize: Int? = nil) -> AppTCP {
        nextPort += 1
        let local = SocketEndpoint(address: IPAddress("198.18.0.1")!, port: nextPort)
        let app = AppTCP(from: local, to: destination) { [unowned self] packet in flow.inject([packet]) }
        app.segmentSize = segmentSize
        connections[Self.key(local, destination)] = app
        app.connect()
        return app
    }

    /// A UDP datagram from the application endpoint `from` to `to`.
    func sendUDP(_ payload: [UInt8], from: SocketEndpoint, to: SocketEndpoint) {
        sendUDP([(payload, from)], to: to)
    }

    /// Several datagrams to `to`, each from its own endpoint, written into the flow at once: the
    /// engine reads them in one turn, as a burst from applications arrives.
    func sendUDP(_ burst: [(payload: [UInt8], from: SocketEndpoint)], to: SocketEndpoint) {
        flow.inject(burst.map { payload, from in
            var packet = [UInt8](repeating: 0, count: 28 + payload.count)
            let n = packet.withUnsafeMutableBytes { buffer in
                payload.withUnsafeBytes { (try? UDPPacket.emit(from: from, to: to, payload: $0, identification: 1, dontFragment: false, into: buffer)) ?? 0 }
            }
            return Array(packet[0..<n])
        })
    }

    /// Writes raw packets into the flow, as a misbehaving application might.
    func inject(_ packets: [[UInt8]]) { flow.inject(packets) }

    private static func key(_ local: SocketEndpoint, _ remote: SocketEndpoint) -> String { "\(local)|\(remote)" }

    private func received(_ batch: [(packet: [UInt8], offload: PacketOffload)]) {
        for (packet, offload) in batch {
            var bytes = packet
            if let partial = offload.partialChecksum {
                let ok = bytes.withUnsafeMutableBytes { partial.complete(in: $0) }
                XCTAssertTrue(ok, "a partial checksum outside its packet")
            }
            guard let summary = bytes.withUnsafeBytes({ try? PacketSummary(parsing: $0, checks: .all) }) else {
                if bytes.withUnsafeBytes({ (try? ICMPSummary(parsing: $0)) != nil }) { icmp.append(bytes) } else {
                    XCTFail("the engine wrote a packet that does not parse")
                }
                continue
            }
            switch summary.protocol {
            case .tcp:
                guard let segment = try? Segment(parsing: bytes) else {
                    XCTFail("the engine wrote a TCP packet that does not parse")
                    continue
                }
                connections[Self.key(segment.destination, segment.source)]?.handle(segment)
            case .udp:
                datagrams.append((summary.source, summary.destination, Array(bytes[summary.payloadRange])))
            default:
                icmp.append(bytes)
            }
        }
    }
}

/// SHA-256 of `bytes` (libsodium), for comparing transfers.
func sha256(_ bytes: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    _ = crypto_hash_sha256(&out, bytes, UInt64(bytes.count))
    return out
}
