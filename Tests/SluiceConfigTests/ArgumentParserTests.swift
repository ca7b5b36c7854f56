@testable import SluiceConfig
import XCTest

/// Tokenizing, command dispatch, help and the errors of the command line itself.
final class ArgumentParserTests: XCTestCase {
    func testSimpleCommands() throws {
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["keygen"]), .keygen(KeygenConfig()))
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["pubkey"]), .pubkey)
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["--version"]), .version)
    }

    func testHelpForms() throws {
        guard case .help(let main) = try CommandLineParser.parse(arguments: ["--help"]) else { return XCTFail() }
        XCTAssertTrue(main.contains("Usage: sluice <command>"))
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["-h"]), .help(main))
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["help"]), .help(main))
        for name in ["keygen", "pubkey", "relay", "up"] {
            guard case .help(let text) = try CommandLineParser.parse(arguments: [name, "--help"]) else { return XCTFail(name) }
            XCTAssertTrue(text.hasPrefix("Usage: sluice \(name)"), text)
            XCTAssertEqual(try CommandLineParser.parse(arguments: [name, "-h"]), .help(text))
            XCTAssertEqual(try CommandLineParser.parse(arguments: ["help", name]), .help(text))
            XCTAssertEqual(CommandLineParser.usage(for: name), text)
        }
    }

    func testHelpWinsOverOtherProblems() throws {
        guard case .help(let text) = try CommandLineParser.parse(arguments: ["up", "--bogus", "--relay", "--help"]) else {
            return XCTFail()
        }
        XCTAssertTrue(text.hasPrefix("Usage: sluice up"))
    }

    func testMissingCommand() {
        let error = assertConfigError(parsing([]), contains: ["needs a command", "sluice --help"])
        XCTAssertEqual(error, .missingCommand)
    }

    func testUnknownCommandSuggestsClosest() {
        assertConfigError(parsing(["rely"]), contains: ["no command \"rely\"", "did you mean \"relay\"?"])
        assertConfigError(parsing(["bogus"]), contains: ["no command \"bogus\"", "sluice --help"])
        assertConfigError(parsing(["help", "uup"]), contains: ["\"uup\"", "\"up\""])
    }

    func testUnknownTopLevelFlag() {
        assertConfigError(parsing(["--verison"]), contains: ["--verison", "did you mean --version?"])
    }

    func testUnknownFlagSuggestsClosest() {
        let error = assertConfigError(parsing(["relay", "--listne", "0.0.0.0:7000"]),
                                      contains: ["sluice relay", "--listne", "did you mean --listen?"])
        XCTAssertEqual(error, .unknownFlag("--listne", command: "relay", suggestion: "listen"))
        assertConfigError(parsing(["up", "--relay-pubkey", "x"]), contains: ["--relay-pubkey", "--relay-public-key"])
        assertConfigError(parsing(["up", "--mtuu=1400"]), contains: ["--mtuu", "did you mean --mtu?"])
    }

    func testUnknownFlagWithoutCloseMatch() {
        assertConfigError(parsing(["relay", "--frobnicate"]), contains: ["no option --frobnicate", "sluice relay --help"])
    }

    func testOneDashTypoSuggestsTwoDashes() {
        assertConfigError(parsing(["relay", "-listen", "0.0.0.0:7000"]), contains: ["-listen", "did you mean --listen?"])
    }

    func testFlagOfOtherCommandSaysWhose() {
        let error = assertConfigError(parsing(["relay", "--route", "10.0.0.0/8"]), contains: ["--route", "sluice up"])
        XCTAssertEqual(error, .flagOfOtherCommand("route", command: "relay", owner: "up"))
    }

    func testMissingValueAtEnd() {
        let error = assertConfigError(parsing(["up", "--tun", "sluice0", "--relay"]), contains: ["--relay needs a value", "ENDPOINT"])
        XCTAssertEqual(error, .missingValue(flag: "relay", command: "up", placeholder: "ENDPOINT"))
    }

    func testMissingValueBeforeAnotherFlag() {
        assertConfigError(parsing(["up", "--relay", "--tun", "sluice0"]), contains: ["--relay needs a value"])
    }

    func testDuplicateFlag() {
        let error = assertConfigError(parsing(["up", "--mtu", "1400", "--mtu=1500"]), contains: ["--mtu", "more than once"])
        XCTAssertEqual(error, .duplicateFlag(flag: "mtu", command: "up"))
    }

    func testUnexpectedPositional() {
        let error = assertConfigError(parsing(["relay", "--listen", "0.0.0.0:7000", "extra"]),
                                      contains: ["sluice relay", "\"extra\""])
        XCTAssertEqual(error, .unexpectedArgument("extra", command: "relay"))
        assertConfigError(parsing(["keygen", "client.key"]), contains: ["sluice keygen", "\"client.key\""])
        assertConfigError(parsing(["relay", "--", "--listen"]), contains: ["\"--listen\""])
        assertConfigError(parsing(["--version", "now"]), contains: ["\"now\""])
    }

    func testSwitchTakesNoValue() {
        assertConfigError(parsing(["up", "--help=yes"]), contains: ["--help takes no value"])
    }

    func testTokenizerKeepsOrderAndBothForms() throws {
        let parser = ArgumentParser(command: .up)
        let values = try parser.parse(["--route", "10.0.0.0/8", "--route=fd20::/64", "--mtu=1400", "--tun", "-weird"])
        XCTAssertEqual(values["route"], ["10.0.0.0/8", "fd20::/64"])
        XCTAssertEqual(values["mtu"], ["1400"])
        XCTAssertEqual(values["tun"], ["-weird"], "a one-dash word is a value, not a flag")
        XCTAssertEqual(try parser.parse(["--tun="])["tun"], [""])
        XCTAssertEqual(try parser.parse(["--tun=a=b"])["tun"], ["a=b"])
    }

    func testEditDistance() {
        XCTAssertEqual(Suggestion.editDistance("listen", "listen"), 0)
        XCTAssertEqual(Suggestion.editDistance("listne", "listen"), 1)
        XCTAssertEqual(Suggestion.editDistance("lsten", "listen"), 1)
        XCTAssertEqual(Suggestion.editDistance("", "up"), 2)
        XCTAssertEqual(Suggestion.editDistance("kitten", "sitting"), 3)
        XCTAssertNil(Suggestion.closest(to: "zzz", among: ["relay", "up"]))
        XCTAssertEqual(Suggestion.closest(to: "handshake", among: ["handshake-timeout", "help"]), "handshake-timeout")
    }

    func testCommandTableIsTheContract() {
        // Scripts depend on these names; a rename must fail here first.
        let expected: [String: [String]] = [
            "keygen": ["output", "force", "help"],
            "pubkey": ["help"],
            "relay": ["listen", "private-key", "allow-client", "psk", "max-streams", "max-stream-rate", "handshake-timeout", "udp-timeout",
                      "max-udp-mappings", "allow-destination", "deny-destination", "max-pending-handshakes", "workers", "busy-poll", "proxy-protocol", "no-bench", "control",
                      "log-level", "config", "help"],
            "up": ["relay", "relay-public-key", "private-key", "psk", "relays", "relay-policy", "upstream", "tun", "address", "route", "mtu", "carriers", "fwmark",
                   "table", "dns", "dns-domain", "resolver", "route-all", "exclude", "route-local", "kill-switch", "no-ipv6", "app-cgroup",
                   "udp-timeout", "max-udp-mappings", "udp-path", "busy-poll", "ping-interval", "ping-misses", "log-level", "config", "help"],
            "down": ["tun", "log-level", "help"],
            "status": ["tun", "relay", "control", "json", "watch", "help"],
            "exec": ["tun", "bypass", "log-level", "help"],
            "cgroup": ["tun", "log-level", "help"],
            "bench": ["relay", "relay-public-key", "private-key", "psk", "seconds", "direction", "streams", "carriers", "json",
                      "log-level", "config", "help"],
            "socks": ["listen", "relay", "relay-public-key", "private-key", "psk", "relays", "relay-policy", "carriers", "ping-interval",
                      "ping-misses", "auth-file", "log-level", "config", "help"],
        ]
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: CommandSpec.all.map { ($0.name, $0.flags.map(\.name)) }), expected)
        let repeatable = CommandSpec.all.flatMap { $0.flags.filter(\.repeatable).map { "\($0.name)" } }
        XCTAssertEqual(Set(repeatable), ["allow-client", "address", "route", "dns", "dns-domain", "exclude", "app-cgroup",
                                         "allow-destination", "deny-destination", "relays"])
        XCTAssertEqual(CommandSpec.up.flag(named: "route-all")?.jsonKey, "routeAll")
        XCTAssertEqual(CommandSpec.up.flag(named: "no-ipv6")?.jsonKey, "noIpv6")
        XCTAssertEqual(CommandSpec.up.flag(named: "relay-public-key")?.jsonKey, "relayPublicKey")
    }
}

final class StatusCommandTests: XCTestCase {
    func testStatusFlags() throws {
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["status"]), .status(StatusConfig()))
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["status", "--tun", "sluice0", "--json"]),
                       .status(StatusConfig(tun: "sluice0", json: true)))
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["status", "--control", "/tmp/r.sock"]),
                       .status(StatusConfig(relayOnly: true, control: "/tmp/r.sock")))
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["status", "--relay", "--watch"]),
                       .status(StatusConfig(relayOnly: true, watch: true)))
    }

    func testStatusRefusesContradictions() {
        for arguments in [["status", "--json", "--watch"], ["status", "--tun", "sluice0", "--relay"]] {
            XCTAssertThrowsError(try CommandLineParser.parse(arguments: arguments)) { error in
                XCTAssertTrue("\(error)".contains("cannot be given together"), "\(error)")
            }
        }
    }
}
