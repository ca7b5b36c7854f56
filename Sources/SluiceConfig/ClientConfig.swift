import SluiceWire

/// Validated settings of `sluice up`. Built by `CommandLineParser` from flags and/or a JSON file;
/// every value here has passed its checks.
public struct ClientConfig: Sendable, Equatable {
    public static let defaultMTU = 1500
    public static let mtuRange = 1280...65_535
    public static let defaultCarriers = 2
    public static let carriersRange = 1...16
    /// "SL" in ASCII.
    public static let defaultFwmark: UInt32 = 0x534c
    public static let fwmarkRange: ClosedRange<UInt32> = 1...UInt32.max
    /// 0x534c in decimal, so the table and the mark are easy to match up.
    public static let defaultTable: UInt32 = 21_324
    /// 0 (unspec) and 253...255 (default, main, local) are the kernel's own tables.
    public static let reservedTables: Set<UInt32> = [0, 253, 254, 255]
    /// A PING to the relay every 5 s; after 3 unanswered (15 s) the carrier is redialled.
    public static let defaultPingIntervalSeconds = 5.0
    /// At most 20 s: the relay closes a carrier that sent it nothing for 30 s.
    public static let pingIntervalRange = 0.1...20.0
    public static let defaultPingMisses = 3
    public static let pingMissesRange = 1...100

    /// The relays with their keys, in order of preference (`--relay` and `--relay-public-key`, or
    /// `--relays`); empty with a SOCKS5 `upstream`.
    public let relays: [RelayEntry]
    /// How several relays are used (`--relay-policy`): "failover" or "spread".
    public var relayPolicy = RelayEntry.defaultPolicy
    /// This client's static private key, 32 bytes (`--private-key`); nil with a SOCKS5 `upstream`.
    public let privateKey: [UInt8]?
    /// The pre-shared key (`--psk`), or nil for none.
    public let psk: [UInt8]?
    /// A SOCKS5 server to send the flows to instead of a relay (`--upstream`); set exactly when
    /// `relays` is empty.
    public let upstream: SocksUpstreamURL?
    /// Name of the TUN device (`--tun`), a valid Linux interface name.
    public let tun: String
    /// Addresses of the TUN device with their prefix lengths (`--address`); never empty.
    public let addresses: [IPPrefix]
    /// Destination prefixes routed into the tunnel (`--route`), host bits clear; may be empty.
    public let routes: [IPPrefix]
    /// MTU of the TUN device (`--mtu`).
    public let mtu: Int
    /// Carriers (TCP connections) to keep to each relay in use (`--carriers`).
    public let carriers: Int
    /// SO_MARK on carrier sockets (`--fwmark`); nonzero.
    public let fwmark: UInt32
    /// Routing table for the routes (`--table`); not a reserved table.
    public let table: UInt32
    /// Existing cgroup v2 groups (relative to the cgroup2 root, no leading slash) tunnelled like
    /// `sluice exec` programs, or with `--route-all` kept out of the tunnel (`--app-cgroup`).
    public var appCGroups: [String] = []
    /// Resolvers that receive every DNS query of the host (`--dns`); empty: DNS is ordinary traffic.
    public let dns: [IPAddress]
    /// Split DNS (`--dns-domain`): only names in these domains go to `dns`, the others to the host's
    /// own resolver. Empty: every name goes to `dns`. Never set without `dns`.
    public var dnsDomains: [DNSName] = []
    /// How the host's DNS is pointed at `dns` (`--resolver`).
    public var resolver: ResolverMode = .auto
    /// Send all of the host's traffic through the tunnel (`--route-all`): default routes in `table`,
    /// the host's resolver pointed at `dns`. Never true without `dns`.
    public let routeAll: Bool
    /// Prefixes kept off the tunnel (`--exclude`), host bits clear: `throw` routes in `table`.
    public let excludes: [IPPrefix]
    /// With `routeAll`, send locally attached networks (and every other more specific route of the
    /// main table) through the tunnel too (`--route-local`).
    public let routeLocal: Bool
    /// While up, nothing leaves the host except through the TUN, to the relay, or on loopback (`--kill-switch`).
    public let killSwitch: Bool
    /// Tunnel IPv6 off: IPv6 is blocked while the tunnel is up (`--no-ipv6`). No IPv6 address,
    /// route, exclude or resolver comes with it.
    public let blockIPv6: Bool
    /// Idle time after which a UDP mapping expires (`--udp-timeout`).
    public let udpTimeout: Duration
    /// UDP mappings (client source address and port) kept at once (`--max-udp-mappings`).
    public let maxUDPMappings: Int
    /// Time between the carriers' PINGs to the relay (`--ping-interval`).
    public var pingInterval: Duration = .milliseconds(Int64(ClientConfig.defaultPingIntervalSeconds * 1000))
    /// Whether UDP flows use the relay's UDP path (`--udp-path`).
    public var udpPath: UDPPathMode = .auto
    /// How long the engine's loop polls after traffic before it sleeps, in µs; 0 is off (`--busy-poll`).
    public var busyPollMicroseconds = 0
    /// Unanswered PINGs after which a silent carrier is closed and redialled (`--ping-misses`).
    public var pingMisses = ClientConfig.defaultPingMisses
    /// Canonical `--log-level` name; `SluiceLog.LogLevel(name:)` accepts it.
    public let logLevel: String
    /// Conditions worth a log line; the CLI logs them.
    public let warnings: [ConfigWarning]

    public init(relays: [RelayEntry], privateKey: [UInt8]?, psk: [UInt8]? = nil,
                upstream: SocksUpstreamURL? = nil, tun: String,
                addresses: [IPPrefix], routes: [IPPrefix], mtu: Int = ClientConfig.defaultMTU,
                carriers: Int = ClientConfig.defaultCarriers, fwmark: UInt32 = ClientConfig.defaultFwmark,
                table: UInt32 = ClientConfig.defaultTable, dns: [IPAddress] = [],
                routeAll: Bool = false, excludes: [IPPrefix] = [], routeLocal: Bool = false,
                killSwitch: Bool = false, blockIPv6: Bool = false,
                udpTimeout: Duration = .seconds(UDPDefaults.timeoutSeconds), maxUDPMappings: Int = UDPDefaults.maxMappings,
                logLevel: String = "info", warnings: [ConfigWarning] = []) {
        precondition(KeyText.allHaveKeyLength([privateKey, psk]), "keys are 32 bytes")
        precondition(relays.isEmpty != (upstream == nil), "relays or a SOCKS5 upstream")
        self.relays = relays
        self.upstream = upstream
        self.privateKey = privateKey
        self.psk = psk
        self.tun = tun
        self.addresses = addresses
        self.routes = routes
        self.mtu = mtu
        self.carriers = carriers
        self.fwmark = fwmark
        self.table = table
        self.dns = dns
        self.routeAll = routeAll
        self.excludes = excludes
        self.routeLocal = routeLocal
        self.killSwitch = killSwitch
        self.blockIPv6 = blockIPv6
        self.udpTimeout = udpTimeout
        self.maxUDPMappings = maxUDPMappings
        self.logLevel = logLevel
        self.warnings = warnings
    }
}
