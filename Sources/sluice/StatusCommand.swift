import Glibc
import SluiceConfig
import SluiceControl
import SluiceJSON
import SluiceLog
import SluiceRelay
import SluiceSystem
import SluiceUp

/// `sluice status`: asks every running `up` and relay on this host (or the ones named) over its
/// control socket and prints what they report — a table for people, one JSON document for scripts,
/// or the table refreshed in place once a second (`--watch`).
enum StatusCommand {
    /// Everything found, as `--json` prints it.
    struct Report: Codable {
        var tunnels: [TunnelStatus] = []
        var relays: [RelayStatus] = []
    }

    static func run(_ config: StatusConfig) throws {
        if !config.watch {
            let report = try collect(config)
            print(config.json ? JSONWriter.text(try JSONValueEncoder().encode(report), pretty: true) : StatusView.render(report))
            return
        }
        // Ctrl-C ends the watch; the terminal keeps the last picture.
        while true {
            let report = try collect(config)
            let text = "\u{1B}[H\u{1B}[2J" + StatusView.render(report) + "\n(refreshing every second; Ctrl-C to stop)\n"
            _ = text.withCString { write(1, $0, strlen($0)) }
            sleep(1)
        }
    }

    /// Queries the sockets `config` names; fails with one line when none answers.
    static func collect(_ config: StatusConfig) throws -> Report {
        let sockets = try targets(config)
        var report = Report()
        var failures: [String] = []
        for path in sockets {
            do {
                switch try query(path) {
                case .tunnel(let status): report.tunnels.append(status)
                case .relay(let status): report.relays.append(status)
                }
            } catch {
                failures.append("\(error)")
            }
        }
        if config.relayOnly { report.tunnels.removeAll() }
        if config.tun != nil { report.relays.removeAll() }
        if report.tunnels.isEmpty && report.relays.isEmpty {
            let what = config.tun.map { "tunnel \($0)" } ?? (config.relayOnly ? "relay" : "tunnel or relay")
            throw CommandFailure(message: failures.first ?? "no \(what) is running (no control socket in \(RuntimeDirectory.path))", exitCode: 1)
        }
        for failure in failures { Log.warning(failure) }
        return report
    }

    /// The control sockets to ask: the one named, or every one in the runtime directory.
    private static func targets(_ config: StatusConfig) throws -> [String] {
        if let control = config.control { return [control] }
        if let tun = config.tun { return [ControlServer.path(forTunnel: tun)] }
        var paths: [String] = []
        guard let dir = opendir(RuntimeDirectory.path) else { return [] }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".sock") { paths.append(RuntimeDirectory.path + "/" + name) }
        }
        return paths.sorted()
    }

    private enum Answer {
        case tunnel(TunnelStatus)
        case relay(RelayStatus)
    }

    private static func query(_ path: String) throws -> Answer {
        let reply: ControlReply
        do {
            reply = try ControlClient.send(.status, to: path, what: "tunnel or relay")
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 1)
        }
        guard case .ok(let text) = reply else {
            if case .error(let message) = reply { throw CommandFailure(message: "\(path): \(message)", exitCode: 1) }
            throw CommandFailure(message: "\(ControlError.notSluice(path: path))", exitCode: 1)
        }
        do {
            let value = try JSONParser.parse(text)
            guard case .object(let fields) = value, case .string(let kind)? = fields["kind"] else { throw ControlError.notSluice(path: path) }
            switch kind {
            case "tunnel": return .tunnel(try JSONValueDecoder().decode(TunnelStatus.self, from: value))
            case "relay": return .relay(try JSONValueDecoder().decode(RelayStatus.self, from: value))
            default: throw ControlError.notSluice(path: path)
            }
        } catch {
            throw CommandFailure(message: "\(ControlError.notSluice(path: path)): \(error)", exitCode: 1)
        }
    }
}
