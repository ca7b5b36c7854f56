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
    /// Its `features` are what message 2 advertises (docs/protocol.md §1.1). The relay's stream windows
    /// do not grow (`maxStreamWindow`): what a client uploads waits in the relay's memory, which all
    /// its clients share; growth is the client's, for downloads, buffered in the client's own memory.
    public var mux = RelaySettings.defaultMux

    /// `mux`'s default: MuxSettings' with windows that stay at `streamWindow`.
    public static let defaultMux: MuxSettings = {
        var settings = MuxSettings()
        settings.maxStreamWindow = settings.streamWindow
        return settings
    }()

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
