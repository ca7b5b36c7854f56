import SluiceConfig
import SluiceWire
import XCTest

/// `sluice up` from flags.
final class ClientCommandTests: KeyFilesTestCase {
    private var relayKey: String { TestKeys.text(TestKeys.relayPublic) }

    /// Everything `up` requires, with one address; `extra` is appended.
    private func minimal(_ extra: [String] = []) -> [String] {
        ["--relay", "10.10.0.2:7000", "--relay-public-key", relayKey, "--private-key", keys.client,
         "--tun", "sluice0", "--address", "198.18.0.1/30"] + extra
    }

    private func prefix(_ text: String) -> IPPrefix { IPPrefix(text)! }

    func testContractExample() throws {
        let config = try parseUp([
            "--relay", "10.10.0.2:7000", "--relay-public-key", relayKey, "--private-key", keys.client, "--psk", keys.psk,
            "--tun", "sluice0", "--address", "198.18.0.1/30", "--address", "fd53::1/126",
            "--route", "10.20.0.0/24", "--route", "fd20::/64", "--mtu", "1500",
        ])
        XCTAssertEqual(config.relays, [RelayEntry(endpoint: SocketEndpoint("10.10.0.2:7000")!, publicKey: TestKeys.relayPublic)])
        XCTAssertEqual(config.relayPolicy, "failover")
        XCTAssertEqual(config.privateKey, TestKeys.client)
        XCTAssertEqual(config.psk, TestKeys.psk)
        XCTAssertEqual(config.tun, "sluice0")
        XCTAssertEqual(config.addresses, [prefix("198.18.0.1/30"), prefix("fd53::1/126")])
        XCTAssertEqual(config.routes, [prefix("10.20.0.0/24"), prefix("fd20::/64")])
        XCTAssertEqual(config.mtu, 1500)
        XCTAssertEqual(config.carriers, 2)
        XCTAssertEqual(config.fwmark, 0x534c)
        XCTAssertEqual(config.table, 21324)
        XCTAssertEqual(config.logLevel, "info")
        XCTAssertEqual(config.warnings, [])
    }

    func testDefaultsWhenOnlyRequiredGiven() throws {
        let config = try parseUp(minimal())
        XCTAssertNil(config.psk)
        XCTAssertEqual(config.routes, [])
        XCTAssertEqual(config.mtu, ClientConfig.defaultMTU)
        XCTAssertEqual(config.carriers, 2)
    }

    func testUDPAndDNSOptions() throws {
        let defaults = try parseUp(minimal())
        XCTAssertEqual(defaults.dns, [])
        XCTAssertEqual(defaults.udpTimeout, .seconds(60))
        XCTAssertEqual(defaults.maxUDPMappings, 1024)
        XCTAssertEqual(defaults.udpPath, .auto)
        XCTAssertEqual(try parseUp(minimal(["--udp-path", "off"])).udpPath, .off)
        XCTAssertEqual(defaults.busyPollMicroseconds, 0)
        XCTAssertEqual(try parseUp(minimal(["--busy-poll", "200"])).busyPollMicroseconds, 200)
        assertConfigError(parsing(["up"] + minimal(["--busy-poll", "10001"])), contains: ["--busy-poll", "10001"])
        assertConfigError(parsing(["up"] + minimal(["--udp-path", "on"])), contains: ["--udp-path", "on", "auto or off"])

        let config = try parseUp(minimal(["--dns", "10.20.0.2", "--dns", "fd20::2", "--dns", "10.20.0.2",
                                          "--udp-timeout", "2.5", "--max-udp-mappings", "8"]))
        XCTAssertEqual(config.dns, [IPAddress("10.20.0.2")!, IPAddress("fd20::2")!], "duplicates dropped, order kept")
        XCTAssertEqual(config.udpTimeout, .milliseconds(2500))
        XCTAssertEqual(config.maxUDPMappings, 8)

        assertConfigError(parsing(["up"] + minimal(["--dns", "resolver.example"])), contains: ["--dns", "resolver.example"])
        assertConfigError(parsing(["up"] + minimal(["--dns", "0.0.0.0"])), contains: ["--dns", "0.0.0.0"])
        assertConfigError(parsing(["up"] + minimal(["--udp-timeout", "0"])), contains: ["--udp-timeout"])
        assertConfigError(parsing(["up"] + minimal(["--max-udp-mappings", "0"])), contains: ["--max-udp-mappings"])
    }

    func testOptionsInBothForms() throws {
        let config = try parseUp(minimal(["--mtu=1280", "--carriers", "16", "--fwmark=0x10", "--table", "100", "--log-level=trace"]))
        XCTAssertEqual(config.mtu, 1280)
        XCTAssertEqual(config.carriers, 16)
        XCTAssertEqual(config.fwmark, 16)
        XCTAssertEqual(config.table, 100)
        XCTAssertEqual(config.logLevel, "trace")
        XCTAssertEqual(try parseUp(minimal(["--fwmark", "21324"])).fwmark, 0x534c)
        XCTAssertEqual(try parseUp(minimal(["--fwmark", "0XFFFFFFFF"])).fwmark, UInt32.max)
    }

    func testIPv6RelayEndpoint() throws {
        let config = try parseUp(["--relay", "[fd00::2]:7000"] + minimal().dropFirst(2))
        XCTAssertEqual(config.relays.map(\.endpoint), [SocketEndpoint(address: IPAddress("fd00::2")!, port: 7000)])
    }

    func testRequiredSettings() {
        let full = minimal()
        for (flag, key) in [("relay", "relay"), ("relay-public-key", "relayPublicKey"), ("private-key", "privateKey"),
                            ("tun", "tun"), ("address", "address")] {
            let index = full.firstIndex(of: "--" + flag)!
            var without = full
            without.removeSubrange(index...index + 1)
            let error = assertConfigError(parsing(["up"] + without), contains: ["sluice up needs --\(flag)", "\"\(key)\""])
            XCTAssertEqual(error, .missingSetting(flag: flag, key: key, command: "up"))
        }
    }

    func testRelayMustBeAnIPEndpoint() {
        var args = minimal()
        args[1] = "relay.example.com:7000"
        assertConfigError(parsing(["up"] + args), contains: ["--relay relay.example.com:7000", "host names are not resolved"])
        args[1] = "10.10.0.2"
        assertConfigError(parsing(["up"] + args), contains: ["--relay 10.10.0.2", "10.10.0.2:7000 or [fd00::2]:7000"])
    }

    func testBadRelayPublicKey() {
        var args = minimal()
        args[3] = String(relayKey.dropLast(4))
        assertConfigError(parsing(["up"] + args), contains: ["--relay-public-key", "decodes to 30 bytes"])
    }

    func testPingSettings() throws {
        let defaults = try parseUp(minimal())
        XCTAssertEqual(defaults.pingInterval, .seconds(5))
        XCTAssertEqual(defaults.pingMisses, 3)
        let fast = try parseUp(minimal(["--ping-interval", "0.5", "--ping-misses", "4"]))
        XCTAssertEqual(fast.pingInterval, .milliseconds(500))
        XCTAssertEqual(fast.pingMisses, 4)
        assertConfigError(parsing(["up"] + minimal(["--ping-interval", "0.05"])),
                          contains: ["--ping-interval 0.05 is out of range", "0.1 to 20 seconds"])
        assertConfigError(parsing(["up"] + minimal(["--ping-interval", "30"])), contains: ["--ping-interval 30 is out of range"])
        assertConfigError(parsing(["up"] + minimal(["--ping-misses", "0"])), contains: ["--ping-misses 0 is out of range", "1 to 100"])
    }

    func testMTURange() {
        let low = assertConfigError(parsing(["up"] + minimal(["--mtu", "1279"])), contains: ["--mtu 1279 is out of range", "1280 to 65535"])
        XCTAssertEqual(low, .outOfRange(.flag("mtu"), value: "1279", allowed: "1280 to 65535"))
        assertConfigError(parsing(["up"] + minimal(["--mtu", "65536"])), contains: ["--mtu 65536", "1280 to 65535"])
        assertConfigError(parsing(["up"] + minimal(["--mtu", "-1"])), contains: ["--mtu -1 is out of range"])
        assertConfigError(parsing(["up"] + minimal(["--mtu", "1500b"])), contains: ["--mtu 1500b is not a whole number"])
    }

    func testCarriersRange() {
        assertConfigError(parsing(["up"] + minimal(["--carriers", "0"])), contains: ["--carriers 0", "1 to 16"])
        assertConfigError(parsing(["up"] + minimal(["--carriers", "17"])), contains: ["--carriers 17", "1 to 16"])
    }

    func testFwmarkAndTableChecks() {
        assertConfigError(parsing(["up"] + minimal(["--fwmark", "0"])), contains: ["--fwmark 0 is out of range"])
        assertConfigError(parsing(["up"] + minimal(["--fwmark", "0xZZ"])), contains: ["--fwmark 0xZZ", "0x"])
        assertConfigError(parsing(["up"] + minimal(["--fwmark", "0x100000000"])), contains: ["--fwmark 0x100000000 is out of range"])
        assertConfigError(parsing(["up"] + minimal(["--table", "254"])), contains: ["--table 254", "main"])
        assertConfigError(parsing(["up"] + minimal(["--table", "0"])), contains: ["--table 0 is out of range"])
    }

    func testTunNameRules() {
        var args = minimal()
        let index = args.firstIndex(of: "--tun")! + 1
        for bad in ["sixteen-bytes-xx", "a/b", "", "eth0:1", "a b", ".."] {
            args[index] = bad
            assertConfigError(parsing(["up"] + args), contains: ["--tun", "interface name"])
        }
        args[index] = "fifteen-bytes-x"
        XCTAssertNoThrow(try parseUp(args))
    }

    func testAddressesKeepHostBits() throws {
        let config = try parseUp(minimal(["--address", "fd53::1/126", "--address", "10.0.0.7"]))
        XCTAssertEqual(config.addresses, [prefix("198.18.0.1/30"), prefix("fd53::1/126"), prefix("10.0.0.7/32")])
    }

    func testUnusableAddresses() {
        var args = minimal()
        let index = args.firstIndex(of: "--address")! + 1
        for (bad, why) in [("198.18.0.0/30", "network address of 198.18.0.0/30"), ("198.18.0.3/30", "broadcast address"),
                           ("0.0.0.0/0", "unspecified"), ("127.0.0.1/8", "loopback"), ("ff02::1/64", "multicast"),
                           ("198.18.0.1/33", "interface address with prefix length"), ("sluice0", "interface address")] {
            args[index] = bad
            assertConfigError(parsing(["up"] + args), contains: ["--address \(bad)", why])
        }
    }

    func testRouteWithHostBitsSuggestsPrefix() {
        let error = assertConfigError(parsing(["up"] + minimal(["--route", "10.20.0.1/24"])),
                                      contains: ["--route 10.20.0.1/24", "did you mean 10.20.0.0/24?"])
        XCTAssertEqual(error, .routeHasHostBits(.flag("route"), value: "10.20.0.1/24", suggestion: "10.20.0.0/24"))
        assertConfigError(parsing(["up"] + minimal(["--address", "fd53::1/126", "--route", "fd20::1/64"])),
                          contains: ["did you mean fd20::/64?"])
        assertConfigError(parsing(["up"] + minimal(["--route", "10.20.0.0/33"])), contains: ["--route 10.20.0.0/33", "prefix such as"])
    }

    func testRoutesMayBeHostsOrDefault() throws {
        let config = try parseUp(minimal(["--route", "10.20.0.9", "--route", "0.0.0.0/0", "--route", "10.20.0.9/32"]))
        XCTAssertEqual(config.routes, [prefix("10.20.0.9/32"), prefix("0.0.0.0/0")])
    }

    func testRelayInsideRouteIsAWarning() throws {
        var args = minimal(["--route", "10.10.0.0/16"])
        XCTAssertEqual(try parseUp(args).warnings, [.relayInsideRoute(relay: IPAddress("10.10.0.2")!, route: prefix("10.10.0.0/16"))])
        args = minimal(["--route", "0.0.0.0/0"])
        let warning = try XCTUnwrap(parseUp(args).warnings.first)
        XCTAssertTrue(warning.description.contains("the relay 10.10.0.2 lies inside --route 0.0.0.0/0"), warning.description)
        XCTAssertTrue(warning.description.contains("fwmark"))
    }

    func testRouteOfFamilyWithoutAddressIsAWarning() throws {
        let warnings = try parseUp(minimal(["--route", "fd20::/64"])).warnings
        XCTAssertEqual(warnings, [.routeWithoutAddressFamily(route: prefix("fd20::/64"))])
        XCTAssertTrue(warnings[0].description.contains("no --address is IPv6"))
    }
}
