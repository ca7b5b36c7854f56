/// The commands and their flags. Flag names here are a public contract: scripts depend on them.
extension CommandSpec {
    static let keygen = CommandSpec(
        name: "keygen", summary: "make a new private key (base64): to standard output, or to a file of mode 0600",
        synopsis: ["[--output FILE [--force]]"],
        about: "Like `wg genkey`: sluice keygen --output client.key, or sluice keygen > client.key after `umask 077`.",
        flags: [
            FlagSpec("output", "FILE", kind: .path,
                     help: "write the key to FILE with mode 0600 instead of printing it; an existing FILE is refused"),
            FlagSpec("force", kind: .switch, help: "with --output, replace an existing FILE"),
            .help,
        ],
        build: { settings throws(ConfigError) in .keygen(try KeygenConfig(settings: settings)) })

    static let pubkey = CommandSpec(
        name: "pubkey", summary: "read a private key on standard input, print its public key",
        synopsis: ["< client.key"], about: "Like `wg pubkey`: sluice pubkey < client.key > client.pub",
        flags: [.help], build: { _ throws(ConfigError) in .pubkey })

    static let relay = CommandSpec(
        name: "relay", summary: "accept carriers from allowed clients and connect their streams",
        synopsis: ["--listen ENDPOINT --private-key FILE --allow-client KEY... [options]", "--config FILE [options]"],
        about: "Runs the relay end: authenticates clients by public key and opens their TCP streams to the destinations they name.",
        flags: [
            FlagSpec("listen", "ENDPOINT", presence: .required,
                     help: "address and port to listen on: 0.0.0.0:7000 or [::]:7000"),
            FlagSpec("private-key", "FILE", kind: .path, presence: .required,
                     help: "file holding the relay's private key, base64"),
            FlagSpec("allow-client", "KEY", repeatable: true, presence: .atLeastOnce,
                     help: "base64 public key of a client allowed in; repeat for each client"),
            FlagSpec("psk", "FILE", kind: .path,
                     help: "file holding a pre-shared key, base64; clients must use the same one"),
            FlagSpec("max-streams", "N", kind: .integer, presence: .optional(default: String(RelayConfig.defaultMaxStreams)),
                     help: "streams one client may have open at once, \(RelayConfig.maxStreamsRange.lowerBound)..\(RelayConfig.maxStreamsRange.upperBound)"),
            FlagSpec("max-stream-rate", "N", kind: .integer, presence: .optional(default: String(RelayConfig.defaultMaxStreamRate)),
                     help: "streams (and UDP mappings) one client may open per second; past it its carriers wait"),
            FlagSpec("handshake-timeout", "SECONDS", kind: .seconds,
                     presence: .optional(default: RelayConfig.defaultHandshakeTimeoutSeconds.secondsText),
                     help: "time a new carrier has to complete its handshake"),
            .udpTimeout,
            .maxUDPMappings(perClient: true),
            FlagSpec("allow-destination", "CIDR", repeatable: true,
                     help: "destinations clients may reach although the built-in policy refuses them (loopback, link-local, ...), as 169.254.169.254/32; repeatable"),
            FlagSpec("deny-destination", "CIDR", repeatable: true,
                     help: "destinations clients may not reach, as 10.0.0.0/8 or 0.0.0.0/0; the most specific prefix wins; repeatable"),
            FlagSpec("max-pending-handshakes", "N", kind: .integer,
                     presence: .optional(default: String(RelayConfig.defaultMaxPendingHandshakes)),
                     help: "connections still in their handshake kept at once; past it the oldest is closed"),
            FlagSpec("workers", "N", kind: .integer, presence: .optional(default: "online CPUs"),
                     help: "threads serving carriers, each an event loop; a carrier and its streams stay on one, \(RelayConfig.workersRange.lowerBound)..\(RelayConfig.workersRange.upperBound)"),
            .busyPoll,
            FlagSpec("proxy-protocol", kind: .switch,
                     help: "expect a PROXY protocol header (v1 or v2) from a load balancer before each handshake; close connections without one"),
            FlagSpec("no-bench", kind: .switch,
                     help: "refuse streams to the built-in bench endpoints that `sluice bench` measures with"),
            FlagSpec("control", "PATH", kind: .path,
                     help: "control socket for `sluice status` (default: /run/sluice/relay-PORT.sock, skipped when it cannot be made)"),
            .logLevel,
            .config,
            .help,
        ],
        build: { settings throws(ConfigError) in .relay(try RelayConfig(settings: settings)) })

    static let up = CommandSpec(
        name: "up", summary: "bring up the tunnel and carry the --route prefixes through a relay",
        synopsis: [
            "--relay ENDPOINT --relay-public-key KEY --private-key FILE --tun NAME --address CIDR... [--route CIDR...] [options]",
            "--relays ENDPOINT,KEY... [--relay-policy failover|spread] --private-key FILE --tun NAME --address CIDR... [options]",
            "--upstream socks5://[USER:PASSWORD@]HOST:PORT --tun NAME --address CIDR... [--route CIDR...] [options]",
            "--config FILE [options]",
        ],
        about: "Creates the TUN device, routes the --route prefixes into it, and carries their TCP and UDP flows to the relay "
            + "(or to a SOCKS5 server, with --upstream).",
        flags: FlagSpec.relayAccessOrUpstream + [
            FlagSpec("tun", "NAME", presence: .required,
                     help: "name of the TUN device to create, at most 15 bytes"),
            FlagSpec("address", "CIDR", repeatable: true, presence: .atLeastOnce,
                     help: "address of the TUN device with prefix length, as 198.18.0.1/30 or fd53::1/126; repeatable"),
            FlagSpec("route", "CIDR", repeatable: true,
                     help: "prefix to send through the tunnel, as 10.20.0.0/24 or fd20::/64; repeatable"),
            FlagSpec("mtu", "BYTES", kind: .integer, presence: .optional(default: String(ClientConfig.defaultMTU)),
                     help: "MTU of the TUN device, \(ClientConfig.mtuRange.lowerBound)..\(ClientConfig.mtuRange.upperBound)"),
            FlagSpec("carriers", "N", kind: .integer, presence: .optional(default: String(ClientConfig.defaultCarriers)),
                     help: "TCP connections to each relay in use that share the streams, \(ClientConfig.carriersRange.lowerBound)..\(ClientConfig.carriersRange.upperBound)"),
            FlagSpec("fwmark", "MARK", kind: .integerOrHex,
                     presence: .optional(default: "0x" + String(ClientConfig.defaultFwmark, radix: 16)),
                     help: "SO_MARK of carrier sockets so they bypass the tunnel; decimal or 0x hex"),
            FlagSpec("table", "ID", kind: .integerOrHex, presence: .optional(default: String(ClientConfig.defaultTable)),
                     help: "routing table that holds the --route entries"),
            FlagSpec("dns", "ADDRESS", repeatable: true,
                     help: "resolver that gets every DNS query (port 53, UDP and TCP) of the host, through the relay; repeatable"),
            FlagSpec("dns-domain", "DOMAIN", repeatable: true,
                     help: "split DNS: only names in DOMAIN (and below) go to --dns, the others to the host's resolver; repeatable"),
            FlagSpec("resolver", "MODE", presence: .optional(default: ResolverMode.auto.rawValue),
                     help: "how DNS follows --dns: resolved (systemd-resolved over D-Bus), file (/etc/resolv.conf), or auto: resolved when it runs"),
            FlagSpec("route-all", kind: .switch,
                     help: "send all traffic, IPv4 and IPv6, through the tunnel and point the host's DNS at --dns (needs --dns)"),
            FlagSpec("exclude", "CIDR", repeatable: true,
                     help: "prefix kept off the tunnel, as 192.0.2.0/24; repeatable"),
            FlagSpec("route-local", kind: .switch,
                     help: "with --route-all, send locally attached networks through the tunnel too"),
            FlagSpec("kill-switch", kind: .switch,
                     help: "while up, block everything that would leave other than through the tunnel, to the relay or on loopback"),
            FlagSpec("no-ipv6", kind: .switch,
                     help: "turn tunnel IPv6 off: block all IPv6 while up instead of carrying it"),
            FlagSpec("app-cgroup", "PATH", repeatable: true,
                     help: "existing cgroup v2 group, relative to the cgroup2 root (system.slice/backup.service), routed like `sluice exec`; repeatable"),
            .udpTimeout,
            .maxUDPMappings(perClient: false),
            FlagSpec("udp-path", "MODE", presence: .optional(default: UDPPathMode.auto.rawValue),
                     help: "auto: UDP flows as datagrams on the relay's encrypted UDP path where it answers, else on the carrier; off: always on the carrier"),
            .busyPoll,
        ] + FlagSpec.pings + [
            .logLevel,
            .config,
            .help,
        ],
        build: { settings throws(ConfigError) in .up(try ClientConfig(settings: settings)) })

    static let down = CommandSpec(
        name: "down", summary: "stop a tunnel and remove what its `up` installed, also after a crash",
        synopsis: ["[--tun NAME]"],
        about: "Reads the record `sluice up` keeps in /run/sluice/NAME.json: stops that `up` if it still runs, "
            + "then removes exactly the rules, routes, nftables table and resolver change it lists.",
        flags: [
            FlagSpec("tun", "NAME",
                     help: "the tunnel's TUN device; may be left out when only one tunnel is recorded"),
            .logLevel,
            .help,
        ],
        build: { settings throws(ConfigError) in .down(try DownConfig(settings: settings)) })
}

extension Double {
    /// "5" for 5.0, "2.5" for 2.5: seconds as a person writes them.
    var secondsText: String {
        self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
