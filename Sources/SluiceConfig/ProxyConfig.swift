import SluiceWire

/// Validated settings of `sluice socks`: a SOCKS5 and HTTP proxy on `listen` whose connections go to
/// the relays as streams of their carriers.
public struct ProxyConfig: Sendable, Equatable {
    public static let defaultListen = SocketEndpoint(address: .v4(0x7F00_0001), port: 1080)

    /// Where the proxy listens (`--listen`); loopback unless `users` are set.
    public let listen: SocketEndpoint
    /// The relays with their keys, in order of preference (`--relay` and `--relay-public-key`, or `--relays`).
    public let relays: [RelayEntry]
    /// How several relays are used (`--relay-policy`): "failover" or "spread".
    public let relayPolicy: String
    public let privateKey: [UInt8]
    public let psk: [UInt8]?
    /// Carriers to each relay in use (`--carriers`).
    public let carriers: Int
    /// Time between the carriers' PINGs (`--ping-interval`), and unanswered PINGs after which a
    /// silent carrier is closed (`--ping-misses`).
    public let pingInterval: Duration
    public let pingMisses: Int
    /// Usernames and passwords from `--auth-file`; empty: no authentication.
    public let users: [(user: [UInt8], password: [UInt8])]
    public let logLevel: String
    public let warnings: [ConfigWarning]

    public static func == (a: ProxyConfig, b: ProxyConfig) -> Bool {
        a.listen == b.listen && a.relays == b.relays && a.relayPolicy == b.relayPolicy && a.privateKey == b.privateKey
            && a.psk == b.psk && a.carriers == b.carriers && a.pingInterval == b.pingInterval && a.pingMisses == b.pingMisses
            && a.users.map(\.user) == b.users.map(\.user)
            && a.users.map(\.password) == b.users.map(\.password) && a.logLevel == b.logLevel && a.warnings == b.warnings
    }

    init(settings: Settings) throws(ConfigError) {
        var warnings: [ConfigWarning] = []
        (relays, relayPolicy, privateKey, psk) = try settings.relaysAccess(warnings: &warnings)
        if let raw = settings.value("listen") {
            listen = try settings.endpoint(raw, example: "127.0.0.1:1080 or [::1]:1080")
        } else {
            listen = Self.defaultListen
        }
        carriers = try settings.integer("carriers", default: ClientConfig.defaultCarriers, range: ClientConfig.carriersRange)
        pingInterval = try settings.seconds("ping-interval", default: ClientConfig.defaultPingIntervalSeconds, range: ClientConfig.pingIntervalRange)
        pingMisses = try settings.integer("ping-misses", default: ClientConfig.defaultPingMisses, range: ClientConfig.pingMissesRange)
        if let raw = settings.value("auth-file") {
            users = try Self.readUsers(raw, warnings: &warnings)
        } else {
            users = []
        }
        if users.isEmpty && !listen.address.isLoopback {
            throw .openProxy(settings.value("listen")!.origin, value: settings.value("listen")!.text)
        }
        logLevel = try settings.logLevel()
        self.warnings = warnings
    }

    /// `user:password` lines; blank lines and lines starting with `#` are skipped.
    static func readUsers(_ raw: (text: String, origin: SettingOrigin), warnings: inout [ConfigWarning]) throws(ConfigError)
        -> [(user: [UInt8], password: [UInt8])] {
        let contents: SmallFile.Contents
        do {
            contents = try SmallFile.read(raw.text, limit: 1 << 20)
        } catch {
            throw .keyFileUnreadable(what: "auth file", path: raw.text, reason: error.reason)
        }
        if contents.permissions & 0o077 != 0 {
            warnings.append(.keyFileExposed(what: "auth file", path: raw.text, permissions: contents.permissions))
        }
        var users: [(user: [UInt8], password: [UInt8])] = []
        for (index, line) in contents.bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            var bytes = Array(line)
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            if bytes.isEmpty || bytes.first == UInt8(ascii: "#") { continue }
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
                  (1...255).contains(colon), (1...255).contains(bytes.count - colon - 1) else {
                throw .badAuthFile(path: raw.text, line: index + 1)
            }
            users.append((Array(bytes[..<colon]), Array(bytes[(colon + 1)...])))
        }
        guard !users.isEmpty else { throw .badAuthFile(path: raw.text, line: nil) }
        return users
    }
}

extension CommandSpec {
    /// The relay flags (`relay`, `relay-public-key` or `relays`, `relay-policy`, `private-key`, `psk`), the pings and `log-level` as for `up`.
    static let socks = CommandSpec(
        name: "socks", summary: "a SOCKS5 and HTTP proxy whose connections go through the relay, without a TUN or root",
        synopsis: [
            "--relay ENDPOINT --relay-public-key KEY --private-key FILE [--listen 127.0.0.1:1080] [--auth-file FILE] [options]",
            "--relays ENDPOINT,KEY... [--relay-policy failover|spread] --private-key FILE [--listen 127.0.0.1:1080] [options]",
            "--config FILE [options]",
        ],
        about: "Listens for SOCKS5 (CONNECT, UDP ASSOCIATE) and HTTP proxy clients (CONNECT, absolute-form requests) on one port "
            + "and carries each connection as a stream of encrypted carriers to the relay, which resolves names and connects. "
            + "Needs no root. A non-loopback --listen needs --auth-file.",
        flags: [
            FlagSpec("listen", "ENDPOINT", presence: .optional(default: "\(ProxyConfig.defaultListen)"),
                     help: "address and port for SOCKS5 and HTTP clients; not loopback only with --auth-file"),
        ] + FlagSpec.relaysAccess + [
            FlagSpec("carriers", "N", kind: .integer, presence: .optional(default: String(ClientConfig.defaultCarriers)),
                     help: "TCP connections to each relay in use that share the streams, \(ClientConfig.carriersRange.lowerBound)..\(ClientConfig.carriersRange.upperBound)"),
        ] + FlagSpec.pings + [
            FlagSpec("auth-file", "FILE", kind: .path,
                     help: "file of user:password lines; clients must authenticate (SOCKS5 username/password, HTTP Basic)"),
            .logLevel,
            .config,
            .help,
        ],
        build: { settings throws(ConfigError) in .socks(try ProxyConfig(settings: settings)) })
}
