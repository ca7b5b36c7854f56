import SluiceWire

extension RelayConfig {
    /// Validates `sluice relay`'s settings.
    init(settings: Settings) throws(ConfigError) {
        let listen = try settings.endpoint(try settings.required("listen"), example: "0.0.0.0:7000 or [::]:7000")
        let privateKey = try settings.requiredKeyFile("private-key", what: "private key file")
        var clients: [[UInt8]] = []
        for raw in try settings.requiredAll("allow-client") {
            let key = try settings.publicKey(raw)
            if !clients.contains(key) { clients.append(key) }
        }
        let psk = try settings.keyFile("psk", what: "pre-shared key file")
        let maxStreams = try settings.integer("max-streams", default: Self.defaultMaxStreams, range: Self.maxStreamsRange)
        let timeout = try settings.seconds("handshake-timeout", default: Self.defaultHandshakeTimeoutSeconds,
                                           range: Self.handshakeTimeoutRange)
        let udpTimeout = try settings.seconds("udp-timeout", default: Double(UDPDefaults.timeoutSeconds), range: UDPDefaults.timeoutRange)
        let maxUDPMappings = try settings.integer("max-udp-mappings", default: UDPDefaults.maxMappings, range: UDPDefaults.maxMappingsRange)
        let maxPending = try settings.integer("max-pending-handshakes", default: Self.defaultMaxPendingHandshakes,
                                              range: Self.maxPendingHandshakesRange)
        let maxStreamRate = try settings.integer("max-stream-rate", default: Self.defaultMaxStreamRate, range: Self.maxStreamRateRange)
        let (allow, deny) = try Self.destinationRules(settings)
        self.init(listen: listen, privateKey: privateKey, allowedClients: clients, psk: psk, maxStreams: maxStreams,
                  handshakeTimeout: timeout, udpTimeout: udpTimeout, maxUDPMappings: maxUDPMappings,
                  benchEnabled: settings.switchOn("no-bench") == nil, allowDestinations: allow, denyDestinations: deny,
                  maxPendingHandshakes: maxPending, maxStreamRate: maxStreamRate, controlPath: settings.value("control")?.text,
                  logLevel: try settings.logLevel())
        proxyProtocol = settings.switchOn("proxy-protocol") != nil
        workers = try settings.integer("workers", default: Self.defaultWorkers, range: Self.workersRange)
        busyPollMicroseconds = try settings.integer("busy-poll", default: 0, range: BusyPoll.range)
    }

    /// `--allow-destination` and `--deny-destination`: prefixes without host bits, each in one list only.
    private static func destinationRules(_ settings: Settings) throws(ConfigError) -> (allow: [IPPrefix], deny: [IPPrefix]) {
        var allow: [(IPPrefix, SettingOrigin)] = [], deny: [(IPPrefix, SettingOrigin)] = []
        for (flag, isAllow) in [("allow-destination", true), ("deny-destination", false)] {
            for raw in settings.all(flag) {
                let prefix = try settings.route(raw)
                if isAllow {
                    if !allow.contains(where: { $0.0 == prefix }) { allow.append((prefix, raw.origin)) }
                } else if let twin = allow.first(where: { $0.0 == prefix }) {
                    throw .allowedAndDenied(raw.origin, value: raw.text, other: twin.1)
                } else if !deny.contains(where: { $0.0 == prefix }) {
                    deny.append((prefix, raw.origin))
                }
            }
        }
        return (allow.map(\.0), deny.map(\.0))
    }
}
