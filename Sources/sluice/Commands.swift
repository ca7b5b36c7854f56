import Glibc
import SluiceCarrier
import SluiceConfig
import SluiceControl
import SluiceCrypto
import SluiceHost
import SluiceLog
import SluiceSocks
import SluiceSystem
import SluiceRelay
import SluiceTunnel
import SluiceUp
import SluiceWire

let sluiceVersion = "0.1.0"

/// An error the CLI reports as one line with a chosen exit code.
struct CommandFailure: Error {
    let message: String
    let exitCode: Int32
}

/// Prints `sluice: message` (and a hint) to stderr and exits.
func fail(_ message: String, code: Int32, hint: String? = nil) -> Never {
    var text = "sluice: \(message)\n"
    if let hint { text += "sluice: \(hint)\n" }
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(code)
}

enum Commands {
    /// `sluice keygen`: a new private key in base64, like `wg genkey`; with `--output`, to a file of
    /// mode 0600 (`KeyFileWriter`).
    static func keygen(_ config: KeygenConfig) throws {
        let key = PrivateKey.generate()
        do {
            try key.withUnsafeBytes { bytes throws(KeyFileWriter.Failure) in
                if let path = config.output {
                    try KeyFileWriter.write(key: bytes, to: path, replacing: config.replacing)
                } else {
                    try KeyFileWriter.print(key: bytes)
                }
            }
        } catch {
            throw CommandFailure(message: "keygen: \(error)", exitCode: 1)
        }
    }

    /// `sluice pubkey`: reads a private key on stdin, prints its public key, like `wg pubkey`.
    static func pubkey() throws {
        do {
            let key = try PrivateKey(bytes: try KeyText.readStandardInput())
            print(KeyText.encode(key.publicKey.bytes))
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 2)
        }
    }

    /// `sluice relay`: runs until SIGINT/SIGTERM; SIGHUP reads the same arguments (and config file)
    /// again and applies them.
    static func relay(_ config: RelayConfig) throws {
        applyLogLevel(config.logLevel)
        for warning in config.warnings { Log.warning("\(warning)") }
        let arguments = Array(CommandLine.arguments.dropFirst())
        try RelayRunner.run(try RelaySettings(config: config), controlPath: config.controlPath) {
            guard case .relay(let config) = try CommandLineParser.parse(arguments: arguments) else {
                preconditionFailure("the relay's own arguments parse as another command")
            }
            for warning in config.warnings { Log.warning("\(warning)") }
            return try RelaySettings(config: config)
        }
    }

    /// `sluice up`: runs the tunnel in the foreground until SIGINT/SIGTERM.
    static func up(_ config: ClientConfig) throws {
        applyLogLevel(config.logLevel)
        for warning in config.warnings { Log.warning("\(warning)") }
        guard getuid() == 0 || hasNetAdmin() else {
            throw CommandFailure(message: "sluice up needs root or CAP_NET_ADMIN to create the TUN device and routes — run it with sudo", exitCode: 1)
        }
        var tunnel: TunnelConfiguration
        if let upstream = config.upstream {
            let credentials = upstream.username.flatMap { SocksCredentials(username: $0, password: upstream.password ?? []) }
            tunnel = TunnelConfiguration(socks: SocksServer(endpoint: upstream.endpoint, credentials: credentials))
        } else if let privateKey = config.privateKey {
            tunnel = try TunnelConfiguration(
                relays: config.relays.map { try TunnelConfiguration.Relay(endpoint: $0.endpoint, publicKey: PublicKey(bytes: $0.publicKey)) },
                policy: RelayPolicy(rawValue: config.relayPolicy) ?? .failover, privateKey: PrivateKey(bytes: privateKey),
                psk: config.psk.map { try PresharedKey(bytes: $0) })
        } else {
            preconditionFailure("ClientConfig has a relay or an upstream")
        }
        tunnel.carriers = config.carriers
        tunnel.mtu = config.mtu
        tunnel.dnsResolvers = config.dns.map { SocketEndpoint(address: $0, port: 53) }
        tunnel.dnsDomains = config.dnsDomains
        tunnel.udpTimeoutMilliseconds = milliseconds(config.udpTimeout)
        tunnel.maxUDPMappings = config.maxUDPMappings
        tunnel.keepalive = KeepaliveSettings(intervalMilliseconds: milliseconds(config.pingInterval), mode: .probe(misses: config.pingMisses))
        tunnel.udpPath = config.udpPath == .auto
        tunnel.busyPollMicroseconds = config.busyPollMicroseconds
        var host = HostConfiguration(tun: config.tun, addresses: config.addresses, routes: config.routes, fwmark: config.fwmark, table: config.table)
        host.routeAll = config.routeAll
        host.excludes = config.excludes
        host.routeLocal = config.routeLocal
        host.killSwitch = config.killSwitch
        host.blockIPv6 = config.blockIPv6
        host.appCGroups = config.appCGroups
        host.dnsDomains = config.dnsDomains
        host.resolver = HostConfiguration.Resolver(rawValue: config.resolver.rawValue) ?? .auto
        host.upstreamTakesUDP = config.upstream != nil
        let runner: UpRunner
        do {
            runner = try UpRunner(tunnel: tunnel, host: host)
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 1)
        }
        try runner.run()
    }

    /// `sluice down`: stops a tunnel's `up` if it still runs, and removes what its record lists
    /// (see `HostState`).
    static func down(_ config: DownConfig) throws {
        applyLogLevel(config.logLevel)
        guard getuid() == 0 || hasNetAdmin() else {
            throw CommandFailure(message: "sluice down needs root or CAP_NET_ADMIN to remove routes, rules and firewall rules — run it with sudo", exitCode: 1)
        }
        let tun = try config.tun ?? onlyRecordedTunnel()
        let path = HostState.path(for: tun)
        do {
            guard let state = try HostState.load(path: path) else {
                throw CommandFailure(message: "no tunnel \(tun) is recorded in \(HostState.directory); nothing to take down", exitCode: 1)
            }
            if state.ownerIsAlive {
                Log.info("stopping sluice up (pid \(state.pid)) of tunnel \(tun)")
                kill(state.pid, SIGTERM)
                let deadline = MonotonicClock.milliseconds() + 15_000
                while state.ownerIsAlive, MonotonicClock.milliseconds() < deadline { usleep(50_000) }
                guard !state.ownerIsAlive else {
                    throw CommandFailure(message: "sluice up (pid \(state.pid)) of tunnel \(tun) did not stop within 15 s of SIGTERM", exitCode: 1)
                }
                guard try HostState.load(path: path) != nil else {
                    print("tunnel \(tun) is down (sluice up, pid \(state.pid), stopped and removed what it installed)")
                    return
                }
            }
            unlink(ControlServer.path(forTunnel: tun))  // a crashed up's control socket
            let count = try HostState.load(path: path)?.steps.count ?? 0
            let failures = try HostState.undoLeftovers(at: path)
            if !failures.isEmpty {
                throw CommandFailure(message: "tunnel \(tun): \(failures.count) of \(count) changes could not be undone; first: \(failures[0])", exitCode: 1)
            }
            print("tunnel \(tun) is down (removed \(count) changes left by sluice up, pid \(state.pid))")
        } catch let error as HostError {
            throw CommandFailure(message: "\(error)", exitCode: 1)
        }
    }

    /// The tunnel of the only record in /run/sluice.
    private static func onlyRecordedTunnel() throws -> String {
        var names: [String] = []
        if let dir = opendir(HostState.directory) {
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasSuffix(".json") { names.append(String(name.dropLast(5))) }
            }
        }
        switch names.count {
        case 0: throw CommandFailure(message: "no tunnel is recorded in \(HostState.directory); nothing to take down", exitCode: 1)
        case 1: return names[0]
        default: throw CommandFailure(message: "several tunnels are recorded (\(names.sorted().joined(separator: ", "))); say which with --tun NAME", exitCode: 2)
        }
    }

    static func milliseconds(_ d: Duration) -> UInt64 {
        UInt64(d.components.seconds) * 1000 + UInt64(d.components.attoseconds / 1_000_000_000_000_000)
    }

    private static func applyLogLevel(_ name: String) {
        if let level = LogLevel(name: name) { Log.level = level }
    }

    /// CAP_NET_ADMIN in the effective set (bit 12 of CapEff in /proc/self/status).
    private static func hasNetAdmin() -> Bool {
        guard let f = fopen("/proc/self/status", "r") else { return false }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 512)
        while fgets(&line, Int32(line.count), f) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("CapEff:"), let caps = UInt64(text.dropFirst(7).trimmingCharacters(in: " \t\n"), radix: 16) {
                return caps & (1 << 12) != 0
            }
        }
        return false
    }
}

private extension Substring {
    func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}
