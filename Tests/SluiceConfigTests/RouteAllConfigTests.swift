import SluiceConfig
import SluiceWire
import XCTest

/// `--route-all`, `--exclude`, `--route-local`, `--kill-switch`, `--no-ipv6` and `sluice down`.
final class RouteAllConfigTests: KeyFilesTestCase {
    private func minimal(_ extra: [String] = []) -> [String] {
        ["--relay", "10.10.0.2:7000", "--relay-public-key", TestKeys.text(TestKeys.relayPublic), "--private-key", keys.client,
         "--tun", "sluice0", "--address", "198.18.0.1/30", "--address", "fd53::1/126"] + extra
    }

    func testOffByDefault() throws {
        let config = try parseUp(minimal())
        XCTAssertFalse(config.routeAll)
        XCTAssertFalse(config.killSwitch)
        XCTAssertFalse(config.blockIPv6)
        XCTAssertFalse(config.routeLocal)
        XCTAssertEqual(config.excludes, [])
    }

    func testFlags() throws {
        let config = try parseUp(minimal(["--route-all", "--dns", "10.20.0.53", "--exclude", "192.0.2.0/24",
                                          "--exclude", "2001:db8::/32", "--exclude", "192.0.2.0/24", "--kill-switch", "--route-local"]))
        XCTAssertTrue(config.routeAll)
        XCTAssertTrue(config.killSwitch)
        XCTAssertTrue(config.routeLocal)
        XCTAssertEqual(config.excludes, [IPPrefix("192.0.2.0/24")!, IPPrefix("2001:db8::/32")!], "duplicates dropped")
        XCTAssertEqual(config.warnings, [])
    }

    func testRouteAllNeedsDNS() {
        assertConfigError(parsing(["up"] + minimal(["--route-all"])), contains: ["--route-all", "--dns"])
    }

    func testSwitchesTakeNoValue() {
        assertConfigError(parsing(["up"] + minimal(["--route-all=yes", "--dns", "9.9.9.9"])), contains: ["--route-all", "no value"])
        assertConfigError(parsing(["up"] + minimal(["--kill-switch", "--kill-switch"])), contains: ["--kill-switch", "more than once"])
    }

    func testRouteLocalNeedsRouteAll() {
        assertConfigError(parsing(["up"] + minimal(["--route-local"])), contains: ["--route-local", "--route-all"])
    }

    func testExcludeMustBeAPrefix() {
        assertConfigError(parsing(["up"] + minimal(["--exclude", "192.0.2.1/24"])), contains: ["--exclude", "192.0.2.0/24"])
        assertConfigError(parsing(["up"] + minimal(["--exclude", "lan"])), contains: ["--exclude", "lan"])
    }

    func testDNSInsideExcludeIsRefused() {
        assertConfigError(parsing(["up"] + minimal(["--route-all", "--dns", "192.0.2.53", "--exclude", "192.0.2.0/24"])),
                          contains: ["--dns 192.0.2.53", "--exclude 192.0.2.0/24", "outside the tunnel"])
    }

    func testNoIPv6RefusesIPv6Values() throws {
        let base = ["--relay", "10.10.0.2:7000", "--relay-public-key", TestKeys.text(TestKeys.relayPublic), "--private-key", keys.client,
                    "--tun", "sluice0", "--address", "198.18.0.1/30", "--no-ipv6"]
        let config = try parseUp(base + ["--route-all", "--dns", "9.9.9.9"])
        XCTAssertTrue(config.blockIPv6)
        XCTAssertEqual(config.warnings, [], "no IPv6 address is expected with --no-ipv6")
        for extra in [["--address", "fd53::1/126"], ["--route", "fd20::/64"], ["--exclude", "2001:db8::/32"], ["--dns", "2620:fe::fe"]] {
            assertConfigError(parsing(["up"] + base + extra), contains: [extra[0], extra[1], "--no-ipv6", "IPv6"])
        }
    }

    func testRouteAllWithoutIPv6AddressWarns() throws {
        let config = try parseUp(["--relay", "10.10.0.2:7000", "--relay-public-key", TestKeys.text(TestKeys.relayPublic),
                                  "--private-key", keys.client, "--tun", "sluice0", "--address", "198.18.0.1/30",
                                  "--route-all", "--dns", "9.9.9.9"])
        XCTAssertEqual(config.warnings, [.routeAllWithoutAddressFamily(ipv4: false)])
        XCTAssertTrue(config.warnings[0].description.contains("--no-ipv6"))
    }

    func testJSONBooleans() throws {
        let json = """
            { "relay": "10.10.0.2:7000", "relayPublicKey": "\(TestKeys.text(TestKeys.relayPublic))", "privateKey": "\(keys.client)",
              "tun": "sluice0", "address": ["198.18.0.1/30", "fd53::1/126"], "dns": ["9.9.9.9"],
              "routeAll": true, "killSwitch": false, "exclude": ["192.0.2.0/24"] }
            """
        let config = try parseUp(["--config", try dir.write("client.json", json)])
        XCTAssertTrue(config.routeAll)
        XCTAssertFalse(config.killSwitch, "false is the same as leaving the key out")
        XCTAssertEqual(config.excludes, [IPPrefix("192.0.2.0/24")!])

        let wrong = try dir.write("wrong.json", json.replacingOccurrences(of: "\"routeAll\": true", with: "\"routeAll\": \"yes\""))
        assertConfigError(parsing(["up", "--config", wrong]), contains: ["routeAll", "true or false", "a string"])
    }

    func testDown() throws {
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["down"]), .down(DownConfig(tun: nil)))
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["down", "--tun", "sluice1", "--log-level", "debug"]),
                       .down(DownConfig(tun: "sluice1", logLevel: "debug")))
        assertConfigError(parsing(["down", "--tun", "a/b"]), contains: ["--tun", "a/b"])
        assertConfigError(parsing(["down", "--relay", "10.0.0.1:1"]), contains: ["--relay", "sluice up"])
    }
}

/// Split DNS (`--dns-domain`) and the resolver mode (`--resolver`).
final class DNSConfigTests: KeyFilesTestCase {
    private func minimal(_ extra: [String] = []) -> [String] {
        ["--relay", "10.10.0.2:7000", "--relay-public-key", TestKeys.text(TestKeys.relayPublic), "--private-key", keys.client,
         "--tun", "sluice0", "--address", "198.18.0.1/30"] + extra
    }

    func testDefaults() throws {
        let config = try parseUp(minimal(["--dns", "10.20.0.2"]))
        XCTAssertEqual(config.dnsDomains, [])
        XCTAssertEqual(config.resolver, .auto)
    }

    func testDomainsAreNormalisedAndDeduplicated() throws {
        let config = try parseUp(minimal(["--dns", "10.20.0.2", "--dns-domain", "Corp.Test.", "--dns-domain", "corp.test",
                                          "--dns-domain", "lab.example", "--resolver", "file"]))
        XCTAssertEqual(config.dnsDomains, [DNSName("corp.test")!, DNSName("lab.example")!])
        XCTAssertEqual(config.resolver, .file)
    }

    func testDomainNeedsDNS() {
        assertConfigError(parsing(["up"] + minimal(["--dns-domain", "corp.test"])), contains: ["--dns-domain", "only applies together with --dns"])
    }

    func testBadDomains() {
        assertConfigError(parsing(["up"] + minimal(["--dns", "9.9.9.9", "--dns-domain", "a..b"])), contains: ["--dns-domain", "a..b", "corp.example"])
        assertConfigError(parsing(["up"] + minimal(["--dns", "9.9.9.9", "--dns-domain", "."])), contains: ["--dns-domain", "leave out --dns-domain"])
    }

    func testBadResolverMode() {
        assertConfigError(parsing(["up"] + minimal(["--resolver", "networkmanager"])), contains: ["--resolver", "networkmanager", "auto, resolved or file"])
    }

    func testConfigFileKeys() throws {
        let path = try dir.write("client.json", #"{"dns": ["10.20.0.2"], "dnsDomain": ["corp.test"], "resolver": "resolved"}"#)
        let config = try parseUp(minimal(["--config", path]))
        XCTAssertEqual(config.dnsDomains, [DNSName("corp.test")!])
        XCTAssertEqual(config.resolver, .resolved)
    }
}
