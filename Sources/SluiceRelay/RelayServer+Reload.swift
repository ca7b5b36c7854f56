import SluiceCarrier
import SluiceLog
import SluiceMux

/// What `RelayServer.reload()` did.
public enum RelayReload: Sendable, CustomStringConvertible {
    /// The new settings are in force.
    case applied(RelayReloadReport)
    /// They did not load (a broken file, a bad key): nothing changed.
    case refused(String)

    public var description: String {
        switch self {
        case .applied(let report): return "reloaded: \(report)"
        case .refused(let why): return "reload refused, the running configuration stays: \(why)"
        }
    }
}

/// The changes a reload made, for its log line (and the control socket's answer).
public struct RelayReloadReport: Sendable, Equatable, CustomStringConvertible {
    public var clientsAllowed = 0
    public var clientsAdded = 0
    public var clientsRemoved = 0
    /// Carriers of removed clients, closed.
    public var carriersClosed = 0
    /// Streams to destinations the new policy refuses, reset.
    public var streamsReset = 0
    public var pskChanged = false
    public var privateKeyChanged = false
    public var policyChanged = false
    /// `--proxy-protocol` was turned on or off (for new connections).
    public var proxyProtocolChanged = false
    /// Settings that take a restart, each as a sentence.
    public var needingRestart: [String] = []

    public var description: String {
        var parts = ["\(clientsAllowed) client key(s) allowed (\(clientsAdded) added, \(clientsRemoved) removed; "
                     + "\(carriersClosed) carrier(s) of removed clients closed)"]
        if pskChanged { parts.append("pre-shared key changed (for new handshakes)") }
        if privateKeyChanged { parts.append("private key changed (for new handshakes)") }
        if proxyProtocolChanged { parts.append("PROXY protocol headers expected: changed (for new connections)") }
        if policyChanged { parts.append("destination policy changed (\(streamsReset) stream(s) to now refused destinations reset)") }
        return (parts + needingRestart).joined(separator: "; ")
    }
}

/// Reload without dropping anyone: every setting takes effect for what starts after it — new
/// handshakes (allow-list, PSK, private key, timeouts), new streams and datagrams (policy, limits) —
/// and running carriers keep their session keys. Two things reach back: carriers of clients whose
/// key left the allow-list are closed, and streams to destinations the new policy refuses are
/// reset (UDP datagrams are judged one by one anyway). The listening address and the number of
/// workers are kept until a restart. The front applies what handshakes use, then every worker
/// applies the rest on its own loop (`RelayWorker+Reload.swift`), and the report sums them.
extension RelayServer {
    func apply(_ proposed: RelaySettings) -> RelayReloadReport {
        var new = proposed
        let old = settings
        var report = RelayReloadReport()
        if new.listen != old.listen {
            report.needingRestart.append("--listen \(new.listen) takes a restart; still listening on \(old.listen)")
            new.listen = old.listen
        }
        if new.workers != old.workers {
            report.needingRestart.append("--workers \(new.workers) takes a restart; still \(old.workers) worker(s)")
            new.workers = old.workers
        }
        if new.busyPollMicroseconds != old.busyPollMicroseconds {
            report.needingRestart.append("--busy-poll \(new.busyPollMicroseconds) takes a restart; still \(old.busyPollMicroseconds)")
            new.busyPollMicroseconds = old.busyPollMicroseconds
        }
        let removed = old.allowedClients.subtracting(new.allowedClients)
        report.clientsAllowed = new.allowedClients.count
        report.clientsAdded = new.allowedClients.subtracting(old.allowedClients).count
        report.clientsRemoved = removed.count
        report.pskChanged = new.psk != old.psk
        report.privateKeyChanged = new.privateKey != old.privateKey
        report.policyChanged = new.destinationPolicy != old.destinationPolicy
        report.proxyProtocolChanged = new.proxyProtocol != old.proxyProtocol
        Log.level = new.logLevel
        if new.maxStreamRate != old.maxStreamRate { workers.limits.resetRates() }  // new buckets at the new rate
        replaceSettings(new)
        let applied = new
        for effect in workers.gather({ $0.apply(applied, removedClients: removed) }) {
            report.carriersClosed += effect.carriersClosed
            report.streamsReset += effect.streamsReset
        }
        return report
    }
}
