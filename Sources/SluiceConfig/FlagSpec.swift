/// One option a command accepts: its name, the shape of its value, whether it repeats, and the words
/// for `--help`. The same entry serves the command line (`--max-streams`), the JSON config file
/// (`maxStreams`) and the usage text, so the three cannot drift apart.
struct FlagSpec: Sendable {
    /// The shape of the value, which decides the JSON type a config file must use and whether a
    /// relative path is resolved against the config file's directory.
    enum Kind: Sendable, Equatable {
        /// A switch such as `--help`: no value.
        case `switch`
        /// Free text (endpoints, prefixes, names, key text). JSON: string.
        case text
        /// A file name. JSON: string, relative to the config file's directory.
        case path
        /// A whole number. JSON: number.
        case integer
        /// A whole number, decimal or `0x` hex. JSON: number or string.
        case integerOrHex
        /// Seconds, fractions allowed. JSON: number.
        case seconds
        /// A relay and its key, `ENDPOINT,KEY`. JSON: an object `{"endpoint": …, "publicKey": …}`.
        case relay
    }

    /// How the usage text presents the flag.
    enum Presence: Sendable, Equatable {
        case required
        /// Repeatable and needed at least once.
        case atLeastOnce
        /// May be left out; `default` is shown as "(default: …)" when there is one.
        case optional(default: String?)
    }

    /// The name without dashes: "relay-public-key".
    let name: String
    /// The value's name in usage text ("ENDPOINT"); empty for switches.
    let placeholder: String
    let kind: Kind
    let repeatable: Bool
    let presence: Presence
    /// One line for `--help`.
    let help: String
    /// Whether the flag has a JSON key (`--config` and `--help` do not).
    let inConfigFile: Bool
    /// A one-letter alias such as "h", if any.
    let shortName: Character?

    init(_ name: String, _ placeholder: String = "", kind: Kind = .text, repeatable: Bool = false,
         presence: Presence = .optional(default: nil), inConfigFile: Bool = true, shortName: Character? = nil,
         help: String) {
        self.name = name
        self.placeholder = placeholder
        self.kind = kind
        self.repeatable = repeatable
        self.presence = presence
        self.help = help
        self.inConfigFile = inConfigFile
        self.shortName = shortName
    }

    var takesValue: Bool { kind != .switch }

    /// The JSON key: the name in camelCase ("relay-public-key" → "relayPublicKey").
    var jsonKey: String {
        let words = name.split(separator: "-")
        return words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.prefix(1).uppercased() + $0.element.dropFirst() }.joined()
    }

    // MARK: Flags several commands share

    static let help = FlagSpec("help", kind: .switch, inConfigFile: false, shortName: "h", help: "show this help")

    static let config = FlagSpec(
        "config", "FILE", kind: .path, inConfigFile: false,
        help: "read settings from a JSON file; flags given as well override it")

    static let logLevel = FlagSpec(
        "log-level", "LEVEL", presence: .optional(default: LogLevelName.default),
        help: "error, warning, info, debug or trace")

    static let busyPoll = FlagSpec(
        "busy-poll", "MICROSECONDS", kind: .integer, presence: .optional(default: "0"),
        help: "after traffic, poll this long before sleeping: lower latency for a CPU kept busy meanwhile; 0 (off)..\(BusyPoll.range.upperBound)")

    static let udpTimeout = FlagSpec(
        "udp-timeout", "SECONDS", kind: .seconds, presence: .optional(default: String(UDPDefaults.timeoutSeconds)),
        help: "idle time after which a UDP mapping expires")

    /// The four flags by which `bench` reaches the one relay it measures; read by
    /// `Settings.relayAccess`.
    static let relayAccess = relayAccessFlags(relayUnless: nil, keyUnless: nil)

    /// How `socks` reaches its relays: one relay (`--relay`, `--relay-public-key`) or several
    /// (`--relays`), this client's keys, the policy and the pings that find a silent relay; read by
    /// `Settings.relaysAccess`.
    static let relaysAccess = relayAccessFlags(relayUnless: "--relays", keyUnless: nil) + severalRelays

    /// `up`'s ways out: the relay flags, needed unless `--upstream` names a SOCKS5 server instead
    /// (`Settings.relayOrUpstream`).
    static let relayAccessOrUpstream = relayAccessFlags(relayUnless: "--relays or --upstream", keyUnless: "--upstream") + severalRelays + [
        FlagSpec("upstream", "URL",
                 help: "a SOCKS5 server to send the flows to instead of a relay: socks5://[USER:PASSWORD@]HOST:PORT"),
    ]

    /// `--relay` and `--relay-public-key` are required unless `relayUnless` names what replaces them
    /// (nil: always), `--private-key` unless `keyUnless`.
    private static func relayAccessFlags(relayUnless: String?, keyUnless: String?) -> [FlagSpec] {
        func presence(_ unless: String?) -> Presence { unless == nil ? .required : .optional(default: nil) }
        func note(_ unless: String?) -> String { unless.map { " (unless \($0))" } ?? "" }
        return [
            FlagSpec("relay", "ENDPOINT", presence: presence(relayUnless),
                     help: "relay address and port: 10.10.0.2:7000 or [fd00::2]:7000" + note(relayUnless)),
            FlagSpec("relay-public-key", "KEY", presence: presence(relayUnless),
                     help: "the relay's base64 public key" + note(relayUnless)),
            FlagSpec("private-key", "FILE", kind: .path, presence: presence(keyUnless),
                     help: "file holding this client's private key, base64" + note(keyUnless)),
            FlagSpec("psk", "FILE", kind: .path,
                     help: "file holding a pre-shared key, base64, the same as the relay's"),
        ]
    }

    /// Several relays, and how they are used.
    private static let severalRelays = [
        FlagSpec("relays", "ENDPOINT,KEY", kind: .relay, repeatable: true,
                 help: "a relay and its base64 public key, as 10.10.0.2:7000,KEY; repeat for each relay, in order of preference (instead of --relay)"),
        FlagSpec("relay-policy", "POLICY", presence: .optional(default: RelayEntry.defaultPolicy),
                 help: "with several relays: failover (all carriers to the first healthy one) or spread (over all healthy ones)"),
    ]

    /// `--ping-interval` and `--ping-misses`: how soon a carrier to a silent relay is given up.
    static let pings = [
        FlagSpec("ping-interval", "SECONDS", kind: .seconds,
                 presence: .optional(default: ClientConfig.defaultPingIntervalSeconds.secondsText),
                 help: "time between PINGs on each carrier, \(ClientConfig.pingIntervalRange.lowerBound.secondsText) to \(ClientConfig.pingIntervalRange.upperBound.secondsText)"),
        FlagSpec("ping-misses", "N", kind: .integer, presence: .optional(default: String(ClientConfig.defaultPingMisses)),
                 help: "PINGs a carrier may leave unanswered (while nothing else arrives) before it is redialled"),
    ]

    static func maxUDPMappings(perClient: Bool) -> FlagSpec {
        FlagSpec("max-udp-mappings", "N", kind: .integer, presence: .optional(default: String(UDPDefaults.maxMappings)),
                 help: "UDP mappings \(perClient ? "one client may hold" : "kept") at once; the oldest idle goes first")
    }
}
