import Glibc
import SluiceBench
import SluiceConfig
import SluiceCrypto
import SluiceLog
import SluiceTunnel
import SluiceWire

/// `sluice bench`: measures the path to a relay through the carrier, with no TUN and no root.
/// Progress goes to standard error once a second; the summary (or, with `--json`, one JSON line)
/// to standard output.
enum BenchCommand {
    static func run(_ config: BenchConfig) throws {
        if let level = LogLevel(name: config.logLevel) { Log.level = level }
        for warning in config.warnings { Log.warning("\(warning)") }
        let target = try carrierTarget(relay: config.relay, relayPublicKey: config.relayPublicKey, privateKey: config.privateKey, psk: config.psk)
        let (seconds, attoseconds) = config.duration.components
        let settings = BenchSettings(
            target: target, durationMilliseconds: UInt64(seconds) * 1000 + UInt64(attoseconds / 1_000_000_000_000_000),
            phases: config.direction.phases.map { $0 == .up ? BenchDirection.up : .down },
            streams: config.streams, carriers: config.carriers)
        let report: BenchReport
        do {
            report = try BenchRun.run(settings) { line in writeLine(line, to: 2) }
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 1)
        }
        writeLine(config.json ? report.json : report.table, to: 1)
    }

    /// Writes `text` and a newline to `fd` in one go (progress lines must not interleave with logs).
    private static func writeLine(_ text: String, to fd: Int32) {
        var bytes = Array((text + "\n").utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 { if errno == EINTR { continue } else { return } }
                offset += n
            }
        }
    }
}

/// The relay and keys `bench` and `socks` reach it with, from their validated configs.
func carrierTarget(relay: SocketEndpoint, relayPublicKey: [UInt8], privateKey: [UInt8], psk: [UInt8]?) throws -> CarrierTarget {
    try CarrierTarget(relay: relay, relayPublicKey: PublicKey(bytes: relayPublicKey), privateKey: PrivateKey(bytes: privateKey),
                      psk: psk.map { try PresharedKey(bytes: $0) })
}
