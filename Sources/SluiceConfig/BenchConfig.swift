import SluiceWire

/// Validated settings of `sluice bench`: measure upload and download through the carrier (mux and
/// crypto) against the relay's built-in bench endpoints, without a TUN and without root.
public struct BenchConfig: Sendable, Equatable {
    /// Which way bytes move. `both` measures upload first, then download.
    public enum Direction: String, Sendable, Equatable, CaseIterable {
        case up, down, both

        /// The single directions measured, in order.
        public var phases: [Direction] { self == .both ? [.up, .down] : [self] }
    }

    public static let defaultSeconds = 10.0
    public static let secondsRange = 0.5...3600.0
    public static let defaultStreams = 1
    public static let streamsRange = 1...256
    public static let defaultCarriers = 1

    /// The relay's endpoint (`--relay`).
    public let relay: SocketEndpoint
    /// The relay's static public key, 32 bytes (`--relay-public-key`).
    public let relayPublicKey: [UInt8]
    /// This client's static private key, 32 bytes (`--private-key`).
    public let privateKey: [UInt8]
    /// The pre-shared key (`--psk`), or nil for none.
    public let psk: [UInt8]?
    /// How long each direction runs (`--seconds`).
    public let duration: Duration
    /// `--direction`.
    public let direction: Direction
    /// Parallel streams per direction, spread over the carriers (`--streams`).
    public let streams: Int
    /// Carriers to open (`--carriers`).
    public let carriers: Int
    /// Print the result as one JSON line instead of the table (`--json`).
    public let json: Bool
    /// Canonical `--log-level` name.
    public let logLevel: String
    /// Conditions worth a log line; the CLI logs them.
    public let warnings: [ConfigWarning]

    public init(relay: SocketEndpoint, relayPublicKey: [UInt8], privateKey: [UInt8], psk: [UInt8]? = nil,
                duration: Duration = .seconds(10), direction: Direction = .both, streams: Int = BenchConfig.defaultStreams,
                carriers: Int = BenchConfig.defaultCarriers, json: Bool = false, logLevel: String = "info",
                warnings: [ConfigWarning] = []) {
        precondition(KeyText.allHaveKeyLength([relayPublicKey, privateKey, psk]), "keys are 32 bytes")
        self.relay = relay
        self.relayPublicKey = relayPublicKey
        self.privateKey = privateKey
        self.psk = psk
        self.duration = duration
        self.direction = direction
        self.streams = streams
        self.carriers = carriers
        self.json = json
        self.logLevel = logLevel
        self.warnings = warnings
    }

    init(settings: Settings) throws(ConfigError) {
        let (relay, relayPublicKey, privateKey, psk) = try settings.relayAccess()
        let duration = try settings.seconds("seconds", default: Self.defaultSeconds, range: Self.secondsRange)
        var direction = Direction.both
        if let raw = settings.value("direction") {
            guard let parsed = Direction(rawValue: raw.text.lowercased()) else {
                throw .invalidValue(raw.origin, value: raw.text, expected: "up, down or both")
            }
            direction = parsed
        }
        self.init(relay: relay, relayPublicKey: relayPublicKey, privateKey: privateKey, psk: psk, duration: duration,
                  direction: direction,
                  streams: try settings.integer("streams", default: Self.defaultStreams, range: Self.streamsRange),
                  carriers: try settings.integer("carriers", default: Self.defaultCarriers, range: ClientConfig.carriersRange),
                  json: settings.switchOn("json") != nil, logLevel: try settings.logLevel())
    }
}

extension CommandSpec {
    /// `relay`, `relay-public-key`, `private-key`, `psk` and `log-level` mean what they mean for `up`
    /// and may come from `up`'s JSON file; the measurement flags are command-line only.
    static let bench = CommandSpec(
        name: "bench", summary: "measure upload and download through a relay's carrier, without a TUN",
        synopsis: [
            "--relay ENDPOINT --relay-public-key KEY --private-key FILE [--seconds N] [--direction up|down|both] [options]",
            "--config client.json [options]",
        ],
        about: "Opens carriers to the relay as `up` does and streams to its built-in endpoints (bench.sluice.invalid: "
            + "discard to measure upload, chargen for download), printing the rate each second on standard error "
            + "and a summary on standard output. Needs no TUN and no root.",
        flags: FlagSpec.relayAccess + [
            FlagSpec("seconds", "N", kind: .seconds, presence: .optional(default: BenchConfig.defaultSeconds.secondsText),
                     inConfigFile: false,
                     help: "how long each direction runs, \(BenchConfig.secondsRange.lowerBound.secondsText)..\(BenchConfig.secondsRange.upperBound.secondsText)"),
            FlagSpec("direction", "up|down|both", presence: .optional(default: BenchConfig.Direction.both.rawValue),
                     inConfigFile: false, help: "what to measure; both is upload, then download"),
            FlagSpec("streams", "N", kind: .integer, presence: .optional(default: String(BenchConfig.defaultStreams)),
                     inConfigFile: false,
                     help: "parallel streams per direction, spread over the carriers, \(BenchConfig.streamsRange.lowerBound)..\(BenchConfig.streamsRange.upperBound)"),
            FlagSpec("carriers", "N", kind: .integer, presence: .optional(default: String(BenchConfig.defaultCarriers)),
                     inConfigFile: false,
                     help: "TCP connections to the relay, \(ClientConfig.carriersRange.lowerBound)..\(ClientConfig.carriersRange.upperBound)"),
            FlagSpec("json", kind: .switch, inConfigFile: false,
                     help: "print the result as one JSON line on standard output instead of the table"),
            .logLevel,
            .config,
            .help,
        ],
        build: { settings throws(ConfigError) in .bench(try BenchConfig(settings: settings)) })
}
