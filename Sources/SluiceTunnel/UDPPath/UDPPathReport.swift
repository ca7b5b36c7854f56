import SluiceCarrier
import SluiceLog
import SluiceMux

/// What the UDP paths to one relay of a `RelayUpstream` tell the user: one counter set for all of
/// them (paths come and go with their carriers, the totals stay), the log lines — the first
/// validation, the first fallback, a relay without the feature, each once per relay at `info` and
/// later ones at `debug` — and that relay's `UDPPathStatistics` for `sluice status`. Loop-confined.
final class UDPPathReport {
    struct Counters {
        var datagramsOut = 0
        var bytesOut = 0
        /// Packets that carried them: fewer where bundles gather a turn's datagrams.
        var packetsOut = 0
        var datagramsIn = 0
        var bytesIn = 0
        var packetsIn = 0
        var overCarrier = 0
        var tooBig = 0
        var probesSent = 0
        var probesAnswered = 0
        var validations = 0
        var fallbacks = 0
        var socketFull = 0
        var sendFailed = 0
        var icmpErrors = 0
        var malformed = 0
        var unauthenticated = 0
        var replayed = 0
        var unknownStream = 0
    }

    /// Whether the configuration lets UDP flows use the path (`--udp-path auto`).
    let enabled: Bool
    private let relay: String
    var counters = Counters()
    private(set) var paths: [ObjectIdentifier: (path: UDPPathClient, carrier: String)] = [:]
    /// Carriers up whose relay offered no path (it predates the feature or has no UDP socket).
    private var unsupportedCarriers = 0
    private var lastChange: String?
    private var told = Set<String>()

    init(enabled: Bool, relay: String) {
        self.enabled = enabled
        self.relay = relay
    }

    /// A carrier came up without the feature in effect.
    func carrierWithoutPath(_ carrier: Carrier) {
        guard enabled else { return }
        once("unsupported", "relay \(relay) offers no UDP path (it predates it, or its UDP port could not be bound): "
             + "UDP flows go on the carriers")
    }

    func pathStarted(_ path: UDPPathClient, on carrier: Carrier) {
        paths[ObjectIdentifier(path)] = (path, carrier.label)
    }

    func pathEnded(_ path: UDPPathClient) {
        paths[ObjectIdentifier(path)] = nil
    }

    /// The path could not be made (no socket): its carrier's datagrams stay on the carrier.
    func pathFailed(on carrier: Carrier, _ why: String) {
        lastChange = "no UDP path socket: \(why)"
        once("socket", "UDP path to \(relay) not used: \(why); UDP flows go on the carriers")
    }

    func path(_ path: UDPPathClient, on carrier: Carrier, changed change: UDPPathMonitor.Change) {
        switch change {
        case .validated(let roundTrip):
            counters.validations += 1
            lastChange = nil
            once("validated", "UDP path to \(relay) validated (carrier \(carrier.label), \(roundTrip) ms): UDP flows travel as datagrams",
                 else: "UDP path of carrier \(carrier.label) validated")
        case .lost(let wasUp, let why):
            counters.fallbacks += 1
            let retry = "UDP flows go on the carrier; retrying with backoff up to \(path.monitor.timing.maxBackoff / 1000) s"
            lastChange = wasUp ? "stopped answering: \(why)" : "did not validate: \(why)"
            if wasUp {
                once("lost", "UDP path to \(relay) stopped answering (\(why)): \(retry)",
                     else: "UDP path of carrier \(carrier.label) lost: \(why)")
            } else {
                once("invalid", "UDP path to \(relay) does not validate (\(why); UDP blocked on the way?): \(retry)",
                     else: "UDP path of carrier \(carrier.label) did not validate: \(why)")
            }
        }
    }

    private func once(_ key: String, _ line: String, else later: String? = nil) {
        if told.insert(key).inserted {
            Log.info(line, "client")
        } else if let later {
            Log.debug(later, "client")
        }
    }

    // MARK: statistics

    /// Drops by reason, for `TunnelStatistics.drops`.
    var drops: [String: Int] {
        [
            "udp-path-socket-full": counters.socketFull,
            "udp-path-send-failed": counters.sendFailed,
            "udp-path-icmp-error": counters.icmpErrors,
            "udp-path-malformed": counters.malformed,
            "udp-path-unauthenticated": counters.unauthenticated,
            "udp-path-replayed": counters.replayed,
            "udp-path-unknown-stream": counters.unknownStream,
        ]
    }

    func statistics(carriersUp: Int) -> UDPPathStatistics {
        let each = paths.values.sorted { $0.carrier < $1.carrier }.map { entry in
            UDPPathStatistics.Path(carrier: entry.carrier, state: UDPPathStatistics.State(entry.path.state),
                                   rttMicroseconds: entry.path.roundTripMicroseconds, maxPacket: entry.path.maxPacket)
        }
        let state: UDPPathStatistics.State
        if !enabled {
            state = .off
        } else if let best = [.up, .validating, .fallback].first(where: { s in each.contains { $0.state == s } }) {
            state = best
        } else {
            state = carriersUp > 0 ? .unsupported : .waiting
        }
        let c = counters
        return UDPPathStatistics(
            state: state, paths: each, datagramsSent: c.datagramsOut, bytesSent: c.bytesOut, datagramsReceived: c.datagramsIn,
            bytesReceived: c.bytesIn, packetsSent: c.packetsOut, packetsReceived: c.packetsIn, datagramsOverCarrier: c.overCarrier, tooBigForPath: c.tooBig, probesSent: c.probesSent,
            probesAnswered: c.probesAnswered, validations: c.validations, fallbacks: c.fallbacks, lastFallback: lastChange)
    }
}
