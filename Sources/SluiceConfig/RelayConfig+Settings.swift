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
        self.init(listen: listen, privateKey: privateKey, allowedClients: clients, psk: psk, maxStreams: maxStreams,
                  handshakeTimeout: timeout, udpTimeout: udpTimeout, maxUDPMappings: maxUDPMappings,
                  benchEnabled: settings.switchOn("no-bench") == nil, logLevel: try settings.logLevel())
    }
}
