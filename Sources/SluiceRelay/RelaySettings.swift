import SluiceCarrier
import SluiceConfig
import SluiceCrypto
import SluiceLog
import SluiceMux
import SluiceWire

/// Settings of a relay, resolved from the command line or a config file (`init(config:)`), at start
/// and again at each reload.
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
    /// Which destinations clients may reach (`--allow-destination`, `--deny-destination`).
    public var destinationPolicy = DestinationPolicy()
    /// Streams (and UDP associations) one client may open per second, in bursts of as many; past it
    /// the relay reads nothing more from the client's carriers until the rate allows.
    public var maxStreamRate = RelayConfig.defaultMaxStreamRate
    /// Connections still in their handshake kept at once; past it the oldest is closed.
    public var maxPendingHandshakes = RelayConfig.defaultMaxPendingHandshakes
    /// Connections start with a PROXY protocol header naming the client (`--proxy-protocol`).
    public var proxyProtocol = false
    public var logLevel = LogLevel.info
    /// Event loops (threads) that serve carriers (`--workers`); one runs on the caller's thread.
    public var workers = 1
    /// How long each worker's loop polls after traffic before it sleeps (`--busy-poll`,
    /// `EventLoop.busyPollNanoseconds`), in µs; 0 is off. Set when a worker starts: reload keeps it.
    public var busyPollMicroseconds = 0
    /// Its `features` are what message 2 advertises (docs/protocol.md §1.1). Its `windowGrowthPool` is
    /// the workers' own (`RelayWorkers`), whatever this one holds.
    public var mux = MuxSettings()
    /// What the streams of all clients' uploads may be granted together beyond their announced
    /// windows (`MuxSettings.windowGrowthPool`): an upload's bytes wait in the relay's memory, which
    /// all its clients share. Not a flag; the workers take it when they start, and a reload keeps
    /// their pool.
    public var windowGrowthPoolBytes = RelaySettings.defaultWindowGrowthPoolBytes

    /// 64 MiB: sixteen uploads at once grow to `MuxSettings.maxStreamWindow`. On a contended host a
    /// one-stream upload waits for credit while the relay waits for a CPU: against windows that stay
    /// at 512 KiB, `Benchmarks/e2e/ab.py --tests iperf --rounds 4 --busy-loops 2` took it 1.551× (2.50
    /// → 3.87 Gbit/s; floor-aead carried 3.95–4.23 in reqcpu.py's turns) at 0.896× the CPU per GB; growth to 1 and 2 MiB took it
    /// to 2.8–3.1 and 3.4 (`reqcpu.py --test iperf-up --busy-loops 2`). Without the busy loops two ab.py
    /// runs gave 0.958× and 0.960× (rounds overlapping), reqcpu.py's three rounds no difference.
    public static let defaultWindowGrowthPoolBytes = 64 * 1024 * 1024

    public init(listen: SocketEndpoint, privateKey: PrivateKey, allowedClients: Set<PublicKey>, psk: PresharedKey?,
                maxStreamsPerClient: Int, handshakeTimeoutMilliseconds: UInt64) {
        self.listen = listen
        self.privateKey = privateKey
        self.allowedClients = allowedClients
        self.psk = psk
        self.maxStreamsPerClient = maxStreamsPerClient
        self.handshakeTimeoutMilliseconds = handshakeTimeoutMilliseconds
    }

    /// The settings of a validated `sluice relay` configuration.
    public init(config: RelayConfig) throws(CryptoError) {
        var clients = Set<PublicKey>()
        for key in config.allowedClients { clients.insert(try PublicKey(bytes: key)) }
        self.init(listen: config.listen, privateKey: try PrivateKey(bytes: config.privateKey), allowedClients: clients,
                  psk: try config.psk.map { bytes throws(CryptoError) in try PresharedKey(bytes: bytes) },
                  maxStreamsPerClient: config.maxStreams,
                  handshakeTimeoutMilliseconds: Self.milliseconds(config.handshakeTimeout))
        udpTimeoutMilliseconds = Self.milliseconds(config.udpTimeout)
        maxUDPMappingsPerClient = config.maxUDPMappings
        benchEnabled = config.benchEnabled
        destinationPolicy = DestinationPolicy(allow: config.allowDestinations, deny: config.denyDestinations)
        maxPendingHandshakes = config.maxPendingHandshakes
        maxStreamRate = config.maxStreamRate
        proxyProtocol = config.proxyProtocol
        workers = config.workers
        busyPollMicroseconds = config.busyPollMicroseconds
        logLevel = LogLevel(name: config.logLevel) ?? .info
    }

    static func milliseconds(_ d: Duration) -> UInt64 {
        UInt64(d.components.seconds) * 1000 + UInt64(d.components.attoseconds / 1_000_000_000_000_000)
    }
}
