import Glibc
import SluiceClient
import SluiceConfig
import SluiceCrypto
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceRelay
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
    /// `sluice keygen`: a new private key in base64, like `wg genkey`.
    static func keygen() throws {
        print(KeyText.encode(PrivateKey.generate().bytes))
    }

    /// `sluice pubkey`: reads a private key on stdin, prints its public key, like `wg pubkey`.
    static func pubkey() throws {
        var text = ""
        while let line = readLine(strippingNewline: false) { text += line }
        do {
            let bytes = try KeyText.decode(text, source: "standard input")
            print(KeyText.encode(try PrivateKey(bytes: bytes).publicKey.bytes))
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 2)
        }
    }

    /// `sluice relay`: runs until SIGINT/SIGTERM.
    static func relay(_ config: RelayConfig) throws {
        applyLogLevel(config.logLevel)
        for warning in config.warnings { Log.warning("\(warning)") }
        let settings = try RelaySettings(
            listen: config.listen,
            privateKey: PrivateKey(bytes: config.privateKey),
            allowedClients: Set(config.allowedClients.map { try PublicKey(bytes: $0) }),
            psk: config.psk.map { try PresharedKey(bytes: $0) },
            maxStreamsPerClient: config.maxStreams,
            handshakeTimeoutMilliseconds: milliseconds(config.handshakeTimeout))
        var relaySettings = settings
        relaySettings.udpTimeoutMilliseconds = milliseconds(config.udpTimeout)
        relaySettings.maxUDPMappingsPerClient = config.maxUDPMappings
        try RelayRunner.run(relaySettings)
    }

    /// `sluice up`: runs the tunnel in the foreground until SIGINT/SIGTERM.
    static func up(_ config: ClientConfig) throws {
        applyLogLevel(config.logLevel)
        for warning in config.warnings { Log.warning("\(warning)") }
        guard getuid() == 0 || hasNetAdmin() else {
            throw CommandFailure(message: "sluice up needs root or CAP_NET_ADMIN to create the TUN device and routes — run it with sudo", exitCode: 1)
        }
        let settings = try ClientSettings(
            relay: config.relay,
            relayPublicKey: PublicKey(bytes: config.relayPublicKey),
            privateKey: PrivateKey(bytes: config.privateKey),
            psk: config.psk.map { try PresharedKey(bytes: $0) },
            tunName: config.tun, addresses: config.addresses, routes: config.routes,
            mtu: config.mtu, carriers: config.carriers, fwmark: config.fwmark, table: config.table)
        var clientSettings = settings
        clientSettings.dns = config.dns
        clientSettings.udpTimeoutMilliseconds = milliseconds(config.udpTimeout)
        clientSettings.maxUDPMappings = config.maxUDPMappings
        let client: TunnelClient
        do {
            client = try TunnelClient(settings: clientSettings)
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 1)
        }
        try client.run()
    }

    /// `sluice down`: stops a tunnel and removes what it installed (see HostState).
    static func down(_ config: DownConfig) throws {
        applyLogLevel(config.logLevel)
        throw CommandFailure(message: "sluice down: not available yet in this build", exitCode: 1)
    }

    private static func milliseconds(_ d: Duration) -> UInt64 {
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
