import SluiceWire

extension ClientConfig {
    /// Validates `sluice up`'s settings.
    ///
    /// A relay address inside a `--route` prefix is a warning, not an error: carrier sockets carry
    /// `SO_MARK = fwmark`, and the policy rule keeps marked packets out of the tunnel's table, so the
    /// carrier cannot loop into the tunnel. It stays worth a log line because removing that rule by
    /// hand would make it loop.
    init(settings: Settings) throws(ConfigError) {
        var warnings: [ConfigWarning] = []
        let (relays, policy, privateKey, psk, upstream) = try settings.relayOrUpstream()
        let tun = try settings.interfaceName("tun")

        var addresses: [IPPrefix] = []
        for raw in try settings.requiredAll("address") {
            let address = try settings.interfaceAddress(raw)
            if !addresses.contains(address) { addresses.append(address) }
        }
        var routes: [IPPrefix] = []
        for raw in settings.all("route") {
            let route = try settings.route(raw)
            if !routes.contains(route) { routes.append(route) }
        }

        let mtu = try settings.integer("mtu", default: Self.defaultMTU, range: Self.mtuRange)
        let carriers = try settings.integer("carriers", default: Self.defaultCarriers, range: Self.carriersRange)
        let fwmark = try settings.integer("fwmark", default: Self.defaultFwmark, range: Self.fwmarkRange)
        let table = try settings.integer("table", default: Self.defaultTable, range: 1...UInt32.max)
        if Self.reservedTables.contains(table), let raw = settings.value("table") {
            throw .invalidValue(raw.origin, value: raw.text,
                                expected: "usable: 253, 254 and 255 are the kernel's default, main and local tables; pick an unused one such as \(Self.defaultTable)")
        }

        var dns: [IPAddress] = []
        for raw in settings.all("dns") {
            guard let address = IPAddress(raw.text), !address.isUnspecified, !address.isMulticast else {
                throw .invalidValue(raw.origin, value: raw.text, expected: "a resolver's IPv4 or IPv6 address, such as 9.9.9.9 or 2620:fe::fe")
            }
            if !dns.contains(address) { dns.append(address) }
        }
        var excludes: [IPPrefix] = []
        var excludeOrigins: [SettingOrigin] = []
        for raw in settings.all("exclude") {
            let exclude = try settings.route(raw)
            if !excludes.contains(exclude) {
                excludes.append(exclude)
                excludeOrigins.append(raw.origin)
            }
        }
        let routeAll = settings.switchOn("route-all")
        let routeLocal = settings.switchOn("route-local")
        let killSwitch = settings.switchOn("kill-switch") != nil
        let blockIPv6 = settings.switchOn("no-ipv6")
        if let routeAll, dns.isEmpty { throw .routeAllNeedsDNS(routeAll) }
        if let routeLocal, routeAll == nil { throw .needsCompanion(routeLocal, needs: "--route-all") }
        if let blocker = blockIPv6 {
            for flag in ["address", "route", "exclude", "dns"] {
                for raw in settings.all(flag) where !(IPPrefix(raw.text)?.address.isIPv4 ?? IPAddress(raw.text)?.isIPv4 ?? true) {
                    throw .ipv6WhileBlocked(raw.origin, value: raw.text, blocker: blocker)
                }
            }
        }
        for raw in settings.all("dns") {
            guard let address = IPAddress(raw.text),
                  let index = excludes.firstIndex(where: { $0.contains(address) }) else { continue }
            throw .dnsInsideExclude(raw.origin, value: raw.text, exclude: excludeOrigins[index], prefix: excludes[index].description)
        }

        let udpTimeout = try settings.seconds("udp-timeout", default: Double(UDPDefaults.timeoutSeconds), range: UDPDefaults.timeoutRange)
        let maxUDPMappings = try settings.integer("max-udp-mappings", default: UDPDefaults.maxMappings, range: UDPDefaults.maxMappingsRange)

        for address in relays.isEmpty ? [upstream!.endpoint.address] : relays.map(\.endpoint.address) {
            for route in routes where route.contains(address) {
                warnings.append(.relayInsideRoute(relay: address, route: route))
            }
        }
        for route in routes where !addresses.contains(where: { $0.address.isIPv4 == route.address.isIPv4 }) {
            warnings.append(.routeWithoutAddressFamily(route: route))
        }
        if routeAll != nil {
            for family in blockIPv6 == nil ? [true, false] : [true] where !addresses.contains(where: { $0.address.isIPv4 == family }) {
                warnings.append(.routeAllWithoutAddressFamily(ipv4: family))
            }
        }

        self.init(relays: relays, privateKey: privateKey, psk: psk, upstream: upstream, tun: tun,
                  addresses: addresses, routes: routes, mtu: mtu, carriers: carriers, fwmark: fwmark, table: table,
                  dns: dns, routeAll: routeAll != nil, excludes: excludes, routeLocal: routeLocal != nil,
                  killSwitch: killSwitch, blockIPv6: blockIPv6 != nil, udpTimeout: udpTimeout, maxUDPMappings: maxUDPMappings,
                  logLevel: try settings.logLevel(), warnings: warnings)
        relayPolicy = policy
        for raw in settings.all("dns-domain") {
            guard let domain = DNSName(raw.text), !domain.labels.isEmpty else {
                throw .invalidValue(raw.origin, value: raw.text,
                                    expected: raw.text == "." || raw.text.isEmpty
                                        ? "a domain such as corp.example; leave out --dns-domain to send every name to --dns"
                                        : "a domain name such as corp.example (ASCII; write internationalised names as xn--)")
            }
            if dns.isEmpty { throw .needsCompanion(raw.origin, needs: "--dns") }
            if !dnsDomains.contains(domain) { dnsDomains.append(domain) }
        }
        if let raw = settings.value("resolver") {
            guard let mode = ResolverMode(rawValue: raw.text) else {
                throw .invalidValue(raw.origin, value: raw.text, expected: "auto, resolved or file")
            }
            resolver = mode
        }
        if let raw = settings.value("udp-path") {
            guard let mode = UDPPathMode(rawValue: raw.text) else {
                throw .invalidValue(raw.origin, value: raw.text, expected: "auto or off")
            }
            udpPath = mode
        }
        busyPollMicroseconds = try settings.integer("busy-poll", default: 0, range: BusyPoll.range)
        pingInterval = try settings.seconds("ping-interval", default: Self.defaultPingIntervalSeconds, range: Self.pingIntervalRange)
        pingMisses = try settings.integer("ping-misses", default: Self.defaultPingMisses, range: Self.pingMissesRange)
        for raw in settings.all("app-cgroup") {
            guard let group = Self.cgroupPath(raw.text) else {
                throw .invalidValue(raw.origin, value: raw.text,
                                    expected: "a cgroup path relative to the cgroup2 root, such as system.slice/backup.service (no . or .. parts, no quotes)")
            }
            if !appCGroups.contains(group) { appCGroups.append(group) }
        }
    }

    /// `relative` without leading or trailing slashes, or nil if it is empty or has `.`/`..`
    /// components, quotes or control characters.
    static func cgroupPath(_ relative: String) -> String? {
        let parts = relative.split(separator: "/")
        guard !parts.isEmpty, !parts.contains(where: { $0 == "." || $0 == ".." || $0.contains(where: { $0 == "\"" || $0.isNewline || $0 == "\t" }) })
        else { return nil }
        return parts.joined(separator: "/")
    }
}
