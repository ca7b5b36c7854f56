import Glibc
import SluiceWire

/// Validated settings of `sluice relay`. Built by `CommandLineParser` from flags and/or a JSON file;
/// every value here has passed its checks (keys are 32 bytes, numbers are in range).
public struct RelayConfig: Sendable, Equatable {
    public static let defaultMaxStreams = 1024
    /// Per-client stream cap limits; each stream holds a socket on the relay.
    public static let maxStreamsRange = 1...65_536
    public static let defaultHandshakeTimeoutSeconds = 5.0
    public static let handshakeTimeoutRange = 0.1...300.0
    /// Connections that have not finished their handshake, kept at once; past it the oldest is
    /// closed. 256 pending handshakes cost about 256 descriptors and 100 KiB.
    public static let defaultMaxPendingHandshakes = 256
    public static let maxPendingHandshakesRange = 1...65_536
    /// Streams one client may open per second. Far above what a host or a small network behind it
    /// opens, and low enough that a client opening streams to a closed port as fast as it can
    /// leaves another client's download 71-77 % of its speed; at 10,000/s it left 45-50 %, at
    /// 20,000/s 42 % (test_floods.py's flood, medians on the 2-vCPU VM). `make bench` raises it to
    /// measure the relay's own connection rate.
    public static let defaultMaxStreamRate = 5_000
    public static let maxStreamRateRange = 1...10_000_000
    /// One worker (event loop, thread) per online CPU: carriers spread over them.
    public static var defaultWorkers: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
    public static let workersRange = 1...1024

    /// Where to accept carriers (`--listen`), e.g. 0.0.0.0:7000 or [::]:7000.
    public let listen: SocketEndpoint
    /// The relay's static private key, 32 bytes (`--private-key`).
    public let privateKey: [UInt8]
    /// Public keys of the clients allowed in, 32 bytes each, duplicates removed, in the order given
    /// (`--allow-client`); never empty.
    public let allowedClients: [[UInt8]]
    /// The pre-shared key (`--psk`), or nil for none (the protocol then uses 32 zero bytes).
    public let psk: [UInt8]?
    /// Streams one client may have open at once (`--max-streams`).
    public let maxStreams: Int
    /// Time a carrier has to finish its handshake (`--handshake-timeout`).
    public let handshakeTimeout: Duration
    /// Idle time after which a UDP mapping expires (`--udp-timeout`).
    public let udpTimeout: Duration
    /// UDP mappings one client may hold at once (`--max-udp-mappings`).
    public let maxUDPMappings: Int
    /// Whether clients may reach the built-in bench endpoints (`bench.sluice.invalid`); off with
    /// `--no-bench`.
    public let benchEnabled: Bool
    /// The control socket's path (`--control`), or nil for the default.
    public let controlPath: String?
    /// Destination prefixes opened on top of the built-in policy (`--allow-destination`), host bits
    /// clear, duplicates removed; none is also in `denyDestinations`.
    public let allowDestinations: [IPPrefix]
    /// Destination prefixes refused on top of the built-in policy (`--deny-destination`).
    public let denyDestinations: [IPPrefix]
    /// Connections still in their handshake kept at once (`--max-pending-handshakes`).
    public let maxPendingHandshakes: Int
    /// Streams and UDP associations one client may open per second (`--max-stream-rate`).
    public let maxStreamRate: Int
    /// Every connection starts with a PROXY protocol header (v1 or v2) from a load balancer, which
    /// names the client (`--proxy-protocol`); one without a valid header is closed without a reply.
    public var proxyProtocol = false
    /// Worker threads, each an event loop serving its share of the carriers (`--workers`).
    public var workers = RelayConfig.defaultWorkers
    /// How long each worker's loop polls after traffic before it sleeps, in µs; 0 is off (`--busy-poll`).
    public var busyPollMicroseconds = 0
    /// Canonical `--log-level` name; `SluiceLog.LogLevel(name:)` accepts it.
    public let logLevel: String
    /// Conditions worth a log line; the CLI logs them.
    public let warnings: [ConfigWarning]

    public init(listen: SocketEndpoint, privateKey: [UInt8], allowedClients: [[UInt8]], psk: [UInt8]? = nil,
                maxStreams: Int = RelayConfig.defaultMaxStreams,
                handshakeTimeout: Duration = .milliseconds(Int64(RelayConfig.defaultHandshakeTimeoutSeconds * 1000)),
                udpTimeout: Duration = .seconds(UDPDefaults.timeoutSeconds), maxUDPMappings: Int = UDPDefaults.maxMappings,
                benchEnabled: Bool = true, allowDestinations: [IPPrefix] = [], denyDestinations: [IPPrefix] = [],
                maxPendingHandshakes: Int = RelayConfig.defaultMaxPendingHandshakes,
                maxStreamRate: Int = RelayConfig.defaultMaxStreamRate, controlPath: String? = nil,
                logLevel: String = "info", warnings: [ConfigWarning] = []) {
        precondition(KeyText.allHaveKeyLength([privateKey, psk] + allowedClients), "keys are 32 bytes")
        self.listen = listen
        self.privateKey = privateKey
        self.allowedClients = allowedClients
        self.psk = psk
        self.maxStreams = maxStreams
        self.handshakeTimeout = handshakeTimeout
        self.udpTimeout = udpTimeout
        self.maxUDPMappings = maxUDPMappings
        self.benchEnabled = benchEnabled
        self.controlPath = controlPath
        self.allowDestinations = allowDestinations
        self.denyDestinations = denyDestinations
        self.maxPendingHandshakes = maxPendingHandshakes
        self.maxStreamRate = maxStreamRate
        self.logLevel = logLevel
        self.warnings = warnings
    }
}
