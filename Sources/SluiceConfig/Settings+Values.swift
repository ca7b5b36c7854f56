import Glibc
import SluiceWire

/// Typed readers over raw settings. Each error names the flag or file key the bad value came from.
extension Settings {
    /// An `address:port` endpoint with a literal IP address and a nonzero port.
    func endpoint(_ raw: (text: String, origin: SettingOrigin), example: String) throws(ConfigError) -> SocketEndpoint {
        guard let endpoint = SocketEndpoint(raw.text) else {
            throw .invalidValue(raw.origin, value: raw.text,
                                expected: "an IP address and port such as \(example) (IPv6 in brackets; host names are not resolved)")
        }
        guard endpoint.port != 0 else {
            throw .invalidValue(raw.origin, value: raw.text, expected: "usable: port 0 means no port; give the real port")
        }
        return endpoint
    }

    /// A whole number within `range`, or `defaultValue` when the flag is absent. Hex (`0x…`) is accepted
    /// when the flag's kind is `.integerOrHex`.
    func integer<T: FixedWidthInteger>(_ flag: String, default defaultValue: T, range: ClosedRange<T>) throws(ConfigError) -> T {
        guard let raw = value(flag) else { return defaultValue }
        let hexAllowed = command.flag(named: flag)?.kind == .integerOrHex
        let allowed = "\(range.lowerBound) to \(range.upperBound)"
        let text = raw.text
        let parsed: T?
        if hexAllowed, text.lowercased().hasPrefix("0x"), text.count > 2 {
            let digits = text.dropFirst(2)
            guard digits.allSatisfy(\.isHexDigit) else { throw notWhole(raw, hexAllowed) }
            parsed = T(digits, radix: 16)
        } else {
            let digits = text.hasPrefix("-") ? text.dropFirst() : text[...]
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { throw notWhole(raw, hexAllowed) }
            parsed = T(text)
        }
        guard let parsed, range.contains(parsed) else { throw .outOfRange(raw.origin, value: text, allowed: allowed) }
        return parsed
    }

    private func notWhole(_ raw: (text: String, origin: SettingOrigin), _ hexAllowed: Bool) -> ConfigError {
        .invalidValue(raw.origin, value: raw.text, expected: hexAllowed ? "a whole number (decimal, or hex with 0x)" : "a whole number")
    }

    /// A duration in seconds (fractions allowed) within `range`, or the default when absent.
    func seconds(_ flag: String, default defaultSeconds: Double, range: ClosedRange<Double>) throws(ConfigError) -> Duration {
        let seconds: Double
        if let raw = value(flag) {
            guard let parsed = Double(raw.text), parsed.isFinite,
                  raw.text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "." || $0 == "-") }) else {
                throw .invalidValue(raw.origin, value: raw.text, expected: "a number of seconds such as 5 or 2.5")
            }
            guard range.contains(parsed) else {
                throw .outOfRange(raw.origin, value: raw.text, allowed: "\(range.lowerBound.secondsText) to \(range.upperBound.secondsText) seconds")
            }
            seconds = parsed
        } else {
            seconds = defaultSeconds
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// Whether a switch (`--route-all`, or `"routeAll": true` in a config file) is on; its origin if so.
    func switchOn(_ flag: String) -> SettingOrigin? {
        assert(command.flag(named: flag)?.kind == .switch, "\(flag) is not a switch")
        return value(flag)?.origin
    }

    /// The canonical `--log-level` name, or the default.
    func logLevel() throws(ConfigError) -> String {
        guard let raw = value(FlagSpec.logLevel.name) else { return LogLevelName.default }
        guard let name = LogLevelName.canonical(raw.text) else {
            throw .invalidValue(raw.origin, value: raw.text, expected: "a log level: " + LogLevelName.all.joined(separator: ", "))
        }
        return name
    }

    /// A public key given as base64 text; refuses the all-zero key and points out a file name given
    /// where the text belongs.
    func publicKey(_ raw: (text: String, origin: SettingOrigin)) throws(ConfigError) -> [UInt8] {
        let key: [UInt8]
        do {
            // A public key is not secret: quoting it (shortened) shows the user which value was wrong.
            let shown = raw.text.count > 60 ? String(raw.text.prefix(57)) + "..." : raw.text
            key = try KeyText.decode(raw.text, source: "\(raw.origin.description) \"\(shown)\"")
        } catch {
            if !raw.text.isEmpty, access(raw.text, F_OK) == 0 {
                throw .keyGivenAsFileName(raw.origin, path: raw.text)
            }
            throw error
        }
        guard key.contains(where: { $0 != 0 }) else { throw .invalidKey(source: raw.origin.description, problem: .allZero) }
        return key
    }

    /// A key file named by a flag, or nil when the flag is absent. Appends a warning when others may
    /// read the file.
    func keyFile(_ flag: String, what: String, warnings: inout [ConfigWarning]) throws(ConfigError) -> [UInt8]? {
        guard let raw = value(flag) else { return nil }
        return try keyFile(raw, what: what, warnings: &warnings)
    }

    /// A key file that must be given.
    func requiredKeyFile(_ flag: String, what: String, warnings: inout [ConfigWarning]) throws(ConfigError) -> [UInt8] {
        try keyFile(try required(flag), what: what, warnings: &warnings)
    }

    /// The relay and the keys to reach it (`FlagSpec.relayAccess`), as `up` and `bench` take them.
    func relayAccess(warnings: inout [ConfigWarning]) throws(ConfigError)
        -> (relay: SocketEndpoint, relayPublicKey: [UInt8], privateKey: [UInt8], psk: [UInt8]?) {
        let relay = try endpoint(try required("relay"), example: "10.10.0.2:7000 or [fd00::2]:7000")
        let relayPublicKey = try publicKey(try required("relay-public-key"))
        let privateKey = try requiredKeyFile("private-key", what: "private key file", warnings: &warnings)
        let psk = try keyFile("psk", what: "pre-shared key file", warnings: &warnings)
        return (relay, relayPublicKey, privateKey, psk)
    }

    /// The relays and keys as `up` and `socks` take them (`FlagSpec.relaysAccess`): one relay
    /// (`--relay`, `--relay-public-key`) or a list (`--relays ENDPOINT,KEY`, each relay once), never
    /// both; the canonical `--relay-policy`.
    func relaysAccess(warnings: inout [ConfigWarning]) throws(ConfigError)
        -> (relays: [RelayEntry], policy: String, privateKey: [UInt8], psk: [UInt8]?) {
        let listed = all("relays")
        var relays: [RelayEntry] = []
        if listed.isEmpty {
            let relay = try endpoint(try required("relay"), example: "10.10.0.2:7000 or [fd00::2]:7000")
            relays = [RelayEntry(endpoint: relay, publicKey: try publicKey(try required("relay-public-key")))]
        } else {
            for flag in ["relay", "relay-public-key"] {
                if let other = value(flag) { throw .conflicting(other.origin, listed[0].origin) }
            }
            for raw in listed {
                let entry = try relayEntry(raw)
                if let twin = relays.firstIndex(where: { $0.endpoint == entry.endpoint }) {
                    throw .invalidValue(raw.origin, value: "\(entry.endpoint)",
                                        expected: "each relay once: \(listed[twin].origin) names it already")
                }
                relays.append(entry)
            }
        }
        var policy = RelayEntry.defaultPolicy
        if let raw = value("relay-policy") {
            guard RelayEntry.policies.contains(raw.text.lowercased()) else {
                throw .invalidValue(raw.origin, value: raw.text, expected: "failover or spread")
            }
            policy = raw.text.lowercased()
        }
        let privateKey = try requiredKeyFile("private-key", what: "private key file", warnings: &warnings)
        let psk = try keyFile("psk", what: "pre-shared key file", warnings: &warnings)
        return (relays, policy, privateKey, psk)
    }

    /// One `--relays` value: `ENDPOINT,KEY`.
    private func relayEntry(_ raw: (text: String, origin: SettingOrigin)) throws(ConfigError) -> RelayEntry {
        guard let comma = raw.text.firstIndex(of: ",") else {
            throw .invalidValue(raw.origin, value: raw.text, expected: "a relay and its public key, as 10.10.0.2:7000,KEY (the key in base64)")
        }
        let relay = try endpoint((String(raw.text[..<comma]), raw.origin), example: "10.10.0.2:7000 or [fd00::2]:7000")
        return RelayEntry(endpoint: relay, publicKey: try publicKey((String(raw.text[raw.text.index(after: comma)...]), raw.origin)))
    }

    /// `up`'s way out: the relays and keys (`relaysAccess`), or a SOCKS5 server (`--upstream`) — one
    /// of the two, never both. No relays with an upstream.
    func relayOrUpstream(warnings: inout [ConfigWarning]) throws(ConfigError)
        -> (relays: [RelayEntry], policy: String, privateKey: [UInt8]?, psk: [UInt8]?, upstream: SocksUpstreamURL?) {
        guard let raw = value("upstream") else {
            guard value("relay") != nil || value("relay-public-key") != nil || value("private-key") != nil || !all("relays").isEmpty else {
                throw .missingUpstream(command: command.name)
            }
            let (relays, policy, privateKey, psk) = try relaysAccess(warnings: &warnings)
            return (relays, policy, privateKey, psk, nil)
        }
        for flag in ["relay", "relays", "relay-public-key", "relay-policy", "private-key", "psk"] {
            if let other = value(flag) { throw .conflicting(other.origin, raw.origin) }
        }
        do {
            return ([], RelayEntry.defaultPolicy, nil, nil, try SocksUpstreamURL.parse(raw.text))
        } catch {
            // The value may hold a password: shown without it.
            throw .invalidValue(raw.origin, value: SocksUpstreamURL.redacted(raw.text), expected: error.expected)
        }
    }

    private func keyFile(_ raw: (text: String, origin: SettingOrigin), what: String,
                         warnings: inout [ConfigWarning]) throws(ConfigError) -> [UInt8] {
        guard !raw.text.isEmpty else { throw .invalidValue(raw.origin, value: raw.text, expected: "a file name") }
        let file = try KeyText.read(file: raw.text, what: what)
        if file.isExposed {
            warnings.append(.keyFileExposed(what: what, path: file.path, permissions: file.permissions))
        }
        return file.key
    }
}
