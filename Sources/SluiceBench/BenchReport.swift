import SluiceWire

/// What `sluice bench` measured, and its two renderings: a table for people, one JSON line for scripts.
public struct BenchReport: Sendable {
    /// One direction's figures.
    public struct Phase: Sendable {
        public let direction: BenchDirection
        /// Upload: bytes the relay consumed (all were, before its FIN). Download: bytes received.
        public let bytes: Int
        /// From the first OPEN_OK of the direction to the last of the relay's FINs.
        public let nanoseconds: UInt64

        public var seconds: Double { Double(nanoseconds) / 1e9 }
        public var bitsPerSecond: Double { nanoseconds == 0 ? 0 : Double(bytes) * 8 / seconds }
    }

    public let relay: SocketEndpoint
    public let carriers: Int
    public let streams: Int
    /// TCP connect and Noise handshake of the first carrier.
    public let handshakeNanoseconds: UInt64
    /// OPEN to OPEN_OK of the first stream, on an idle carrier.
    public let openNanoseconds: UInt64
    public let phases: [Phase]

    /// The summary for standard output.
    public var table: String {
        var lines = ["relay \(relay), \(carriers) carrier\(carriers == 1 ? "" : "s"), \(streams) stream\(streams == 1 ? "" : "s") per direction",
                     "handshake  \(Self.fixed(Double(handshakeNanoseconds) / 1e6, 2)) ms  (TCP connect + Noise, first carrier)",
                     "open       \(Self.fixed(Double(openNanoseconds) / 1e6, 2)) ms  (OPEN to OPEN_OK, first stream)"]
        for phase in phases {
            lines.append(Self.padded(phase.direction.rawValue, 5) + "  " + Self.padded(Self.fixed(Double(phase.bytes) / 1e9, 3), 8, left: true)
                         + " GB  " + Self.padded(Self.fixed(phase.seconds, 2), 6, left: true) + " s  " + Self.rate(phase.bitsPerSecond))
        }
        return lines.joined(separator: "\n")
    }

    /// One line of JSON, written by hand (no Foundation in Sources).
    public var json: String {
        let phaseText = phases.map { phase in
            "\"\(phase.direction.rawValue)\":{\"bytes\":\(phase.bytes),\"seconds\":\(Self.fixed(phase.seconds, 6)),"
                + "\"gbps\":\(Self.fixed(phase.bitsPerSecond / 1e9, 6))}"
        }
        let fields = ["\"relay\":\"\(Self.escaped(relay.description))\"", "\"carriers\":\(carriers)", "\"streams\":\(streams)",
                      "\"handshake_ms\":\(Self.fixed(Double(handshakeNanoseconds) / 1e6, 3))",
                      "\"open_ms\":\(Self.fixed(Double(openNanoseconds) / 1e6, 3))"] + phaseText
        return "{" + fields.joined(separator: ",") + "}"
    }

    // MARK: formatting without Foundation

    /// `value` with exactly `decimals` digits after the point (round half away from zero).
    static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9e18 else { return String(value) }
        let whole = UInt64(scaled)
        let divisor = UInt64(scale)
        var text = (value < 0 && whole != 0 ? "-" : "") + String(whole / divisor)
        if decimals > 0 {
            let fraction = String(whole % divisor)
            text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return text
    }

    /// "2.31 Gbit/s", or "512.3 Mbit/s" below one Gbit/s.
    static func rate(_ bitsPerSecond: Double) -> String {
        bitsPerSecond >= 1e9 ? fixed(bitsPerSecond / 1e9, 2) + " Gbit/s" : fixed(bitsPerSecond / 1e6, 1) + " Mbit/s"
    }

    static func padded(_ text: String, _ width: Int, left: Bool = false) -> String {
        let pad = String(repeating: " ", count: max(0, width - text.count))
        return left ? pad + text : text + pad
    }

    /// JSON string escaping for the few characters that need it.
    static func escaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
