import SluiceRelay
import SluiceSystem
import SluiceTunnel
import SluiceUp

/// `sluice status` for people: one block per tunnel and per relay, in the manner of `wg show`.
enum StatusView {
    static func render(_ report: StatusCommand.Report, now: Double = WallClock.seconds()) -> String {
        let blocks = report.tunnels.map { tunnel($0, now: now) } + report.relays.map { relay($0, now: now) }
        return blocks.joined(separator: "\n\n")
    }

    static func tunnel(_ status: TunnelStatus, now: Double) -> String {
        let s = status.statistics
        var lines = ["tunnel \(status.tun) (sluice up, pid \(status.pid)): \(s.state.rawValue)"]
        if s.relays.count > 1 {
            // Several relays: one line each with its health, and each carrier names its relay.
            lines.append("  relays: \(s.relay)")
            for r in s.relays {
                lines.append("    \(r.endpoint), key \(r.publicKey): \(r.health.rawValue)" + (r.takesNewFlows ? ", takes new flows" : "")
                    + (r.carriers > 0 ? ", \(r.carriers) carrier\(r.carriers == 1 ? "" : "s"), \(r.streams) stream\(r.streams == 1 ? "" : "s")" : ""))
                // Each carrier's UDP path goes to its own relay: one line per relay.
                if let path = r.udpPath { lines.append(udpPath(path, indent: "      ")) }
            }
        } else {
            lines.append(s.relayPublicKey.isEmpty ? "  upstream: \(s.relay)" : "  relay: \(s.relay), key \(s.relayPublicKey)")
        }
        lines.append("  addresses: \(status.addresses.joined(separator: ", "))")
        lines.append("  flows: \(s.flows.tcp) TCP" + (s.flows.tcpOpening > 0 ? " (+\(s.flows.tcpOpening) opening)" : "")
            + ", \(s.flows.udpMappings) UDP mapping\(s.flows.udpMappings == 1 ? "" : "s")")
        let t = s.traffic
        lines.append("  transfer: \(bytes(t.tcpBytesUp + t.udpBytesUp)) up, \(bytes(t.tcpBytesDown + t.udpBytesDown)) down"
            + "; now \(rate(s.rates.bytesPerSecondUp)) up, \(rate(s.rates.bytesPerSecondDown)) down")
        for c in s.carriers {
            // A SOCKS5 upstream has one entry, the server; its streams are connections of their own.
            let name = s.relays.count > 1 ? "carrier #\(c.index) to \(c.relay)" : "carrier #\(c.index)"
            var line = s.relayPublicKey.isEmpty ? "  SOCKS5 server: \(c.state.rawValue)" : "  \(name): \(c.state.rawValue)"
            if let since = c.upSince { line += " for \(duration(now - since))" }
            if let handshake = c.lastHandshake { line += ", handshake \(duration(now - handshake)) ago" }
            if let rtt = c.rttMicroseconds { line += ", rtt \(milliseconds(rtt))" }
            if c.state == .up || c.state == .draining {
                line += ", \(c.streams) stream\(c.streams == 1 ? "" : "s"), sent \(bytes(c.bytesSent)), received \(bytes(c.bytesReceived))"
            }
            if c.reconnects > 0 { line += ", \(c.reconnects) reconnect\(c.reconnects == 1 ? "" : "s")" }
            if c.state != .up && c.state != .draining, let error = c.lastError { line += " — last: \(error)" }
            lines.append(line)
        }
        if s.relays.count <= 1, let path = s.udpPath { lines.append(udpPath(path)) }
        lines.append("  drops: " + counts(s.drops))
        return lines.joined(separator: "\n")
    }

    /// "  UDP path: up (2 of 2 carriers), rtt 0.21 ms, 1,200 datagrams sent in 310 packets, 1,180
    /// received in 290, 3 on the carrier (too big), 1 fallback"; or why there is none.
    static func udpPath(_ p: UDPPathStatistics, indent: String = "  ") -> String {
        var line = "\(indent)UDP path: \(p.state.rawValue)"
        if !p.paths.isEmpty {
            let up = p.paths.filter { $0.state == .up }.count
            line += " (\(up) of \(p.paths.count) carrier\(p.paths.count == 1 ? "" : "s") up)"
        }
        if let rtt = p.paths.compactMap(\.rttMicroseconds).min() { line += ", rtt \(milliseconds(rtt))" }
        if p.datagramsSent + p.datagramsReceived > 0 {
            line += ", \(p.datagramsSent) datagrams sent\(inPackets(p.packetsSent, of: p.datagramsSent)), \(p.datagramsReceived) received"
                + inPackets(p.packetsReceived, of: p.datagramsReceived)
        }
        if p.tooBigForPath > 0 { line += ", \(p.tooBigForPath) too big (on the carrier)" }
        if p.fallbacks > 0 { line += ", \(p.fallbacks) fallback\(p.fallbacks == 1 ? "" : "s")" }
        if p.state == .fallback, let why = p.lastFallback { line += " — \(why)" }
        return line
    }

    /// " in 310 packets" where bundles put several datagrams into a packet; nothing when each had its own.
    private static func inPackets(_ packets: Int, of datagrams: Int) -> String {
        packets < datagrams ? " in \(packets) packet\(packets == 1 ? "" : "s")" : ""
    }

    static func relay(_ status: RelayStatus, now: Double) -> String {
        let s = status.statistics
        var lines = ["relay \(s.listen) (pid \(status.pid)): \(s.carriers) carrier\(s.carriers == 1 ? "" : "s")"
            + (s.workers.map { $0.count > 1 ? " on \($0.count) workers (\($0.map(String.init).joined(separator: " + ")))" : "" } ?? "")
            + (s.pendingHandshakes > 0 ? ", \(s.pendingHandshakes) in handshake" : "")
            + (s.windowGrowth.flatMap { grown in s.windowGrowthPool.map { ", upload windows grown by \(bytes(grown)) of \(bytes($0))" } } ?? "")]
        if s.clients.isEmpty { lines.append("  no client connected") }
        for c in s.clients {
            lines.append("  client \(c.publicKey) from \(c.addresses.joined(separator: ", "))")
            lines.append("    \(c.carriers) carrier\(c.carriers == 1 ? "" : "s"), \(c.streams) stream\(c.streams == 1 ? "" : "s"), "
                + "\(c.udpMappings) UDP mapping\(c.udpMappings == 1 ? "" : "s")"
                + (c.udpPaths > 0 ? " (\(c.udpPaths) UDP path\(c.udpPaths == 1 ? "" : "s"))" : "") + ", sent \(bytes(c.bytesSent)), received \(bytes(c.bytesReceived)), "
                + "handshake \(duration(now - c.lastHandshake)) ago"
                + (c.windowGrowth.map { $0 > 0 ? ", upload windows grown by \(bytes($0))" : "" } ?? ""))
        }
        lines.append("  drops: " + counts(s.drops))
        return lines.joined(separator: "\n")
    }

    /// "none", or "reason 3, other 1" by count, largest first.
    static func counts(_ values: [String: Int]) -> String {
        guard !values.isEmpty else { return "none" }
        return values.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }

    static func bytes(_ n: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(n)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(n) B" : "\(fixed(value, 1)) \(units[unit])"
    }

    static func rate(_ bytesPerSecond: Double) -> String {
        let bits = bytesPerSecond * 8
        if bits >= 1e9 { return "\(fixed(bits / 1e9, 2)) Gbit/s" }
        if bits >= 1e6 { return "\(fixed(bits / 1e6, 2)) Mbit/s" }
        return "\(fixed(bits / 1e3, 1)) kbit/s"
    }

    static func duration(_ seconds: Double) -> String {
        let s = max(0, Int(seconds))
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min \(s % 60) s" }
        if s < 86_400 { return "\(s / 3600) h \(s % 3600 / 60) min" }
        return "\(s / 86_400) d \(s % 86_400 / 3600) h"
    }

    static func milliseconds(_ microseconds: Int) -> String { "\(fixed(Double(microseconds) / 1000, 2)) ms" }

    /// `value` with `digits` decimals, without Foundation's formatting.
    static func fixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale), fraction = abs(scaled % Int(scale))
        guard digits > 0 else { return "\(whole)" }
        let text = String(fraction)
        return "\(whole)." + String(repeating: "0", count: digits - text.count) + text
    }
}
