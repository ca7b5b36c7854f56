/// What one worker's UDP path counted (`RelayUDPPath`), summed over the workers for
/// `sluice status --relay` (docs/configuration.md names each).
struct PathCounters: Sendable {
    var sessions = 0
    var packetsIn = 0
    var datagramsIn = 0
    var datagramsOut = 0
    /// Packets that carried them: fewer where bundles gather a turn's datagrams.
    var packetsOut = 0
    var probesAnswered = 0
    /// Associations a datagram on the path opened before their OPEN came on the carrier.
    var opens = 0
    var roamed = 0
    var malformed = 0
    var unknownIndex = 0
    var unauthenticated = 0
    var replayed = 0
    var unknownStream = 0
    /// Datagrams to a client that did not fit its path (they went on the carrier).
    var tooBig = 0
    var sendFailed = 0

    static func + (a: PathCounters, b: PathCounters) -> PathCounters {
        PathCounters(
            sessions: a.sessions + b.sessions, packetsIn: a.packetsIn + b.packetsIn,
            datagramsIn: a.datagramsIn + b.datagramsIn, datagramsOut: a.datagramsOut + b.datagramsOut,
            packetsOut: a.packetsOut + b.packetsOut,
            probesAnswered: a.probesAnswered + b.probesAnswered, opens: a.opens + b.opens, roamed: a.roamed + b.roamed,
            malformed: a.malformed + b.malformed, unknownIndex: a.unknownIndex + b.unknownIndex,
            unauthenticated: a.unauthenticated + b.unauthenticated, replayed: a.replayed + b.replayed,
            unknownStream: a.unknownStream + b.unknownStream, tooBig: a.tooBig + b.tooBig,
            sendFailed: a.sendFailed + b.sendFailed)
    }

    /// Adds these counts to the status's drops and events, under their status names.
    func add(to drops: inout [String: Int], events: inout [String: Int]) {
        drops.merge([
            "udp-path-malformed": malformed,
            "udp-path-unknown-index": unknownIndex,
            "udp-path-unauthenticated": unauthenticated,
            "udp-path-replayed": replayed,
            "udp-path-unknown-stream": unknownStream,
            "udp-path-send-failed": sendFailed,
        ]) { $0 + $1 }
        events.merge([
            "udp-paths-offered": sessions,
            "udp-path-packets-in": packetsIn,
            "udp-path-datagrams-in": datagramsIn,
            "udp-path-datagrams-out": datagramsOut,
            "udp-path-packets-out": packetsOut,
            "udp-path-probes-answered": probesAnswered,
            "udp-path-opens": opens,
            "udp-path-roamed": roamed,
            "udp-path-too-big-for-path": tooBig,
        ]) { $0 + $1 }
    }
}
