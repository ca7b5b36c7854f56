import SluiceConfig
import SluiceWire
import XCTest

/// `sluice bench` from flags and from `up`'s config file, and the relay's `--no-bench`.
final class BenchCommandTests: KeyFilesTestCase {
    private var minimal: [String] {
        ["--relay", "10.10.0.2:7000", "--relay-public-key", TestKeys.text(TestKeys.relayPublic), "--private-key", keys.client]
    }

    private func parseBench(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> BenchConfig {
        let command = try CommandLineParser.parse(arguments: ["bench"] + arguments)
        guard case .bench(let config) = command else {
            XCTFail("expected bench, got \(command)", file: file, line: line)
            throw XCTSkip("not a bench command")
        }
        return config
    }

    func testDefaults() throws {
        let config = try parseBench(minimal)
        XCTAssertEqual(config.relay, SocketEndpoint("10.10.0.2:7000"))
        XCTAssertEqual(config.relayPublicKey, TestKeys.relayPublic)
        XCTAssertEqual(config.privateKey, TestKeys.client)
        XCTAssertNil(config.psk)
        XCTAssertEqual(config.duration, .seconds(10))
        XCTAssertEqual(config.direction, .both)
        XCTAssertEqual(config.direction.phases, [.up, .down])
        XCTAssertEqual(config.streams, 1)
        XCTAssertEqual(config.carriers, 1)
        XCTAssertFalse(config.json)
        XCTAssertEqual(config.logLevel, "info")
    }

    func testEveryFlag() throws {
        let config = try parseBench(minimal + ["--psk", keys.psk, "--seconds", "2.5", "--direction", "DOWN", "--streams", "4",
                                               "--carriers", "2", "--json", "--log-level", "debug"])
        XCTAssertEqual(config.psk, TestKeys.psk)
        XCTAssertEqual(config.duration, .milliseconds(2500))
        XCTAssertEqual(config.direction, .down)
        XCTAssertEqual(config.direction.phases, [.down])
        XCTAssertEqual(config.streams, 4)
        XCTAssertEqual(config.carriers, 2)
        XCTAssertTrue(config.json)
        XCTAssertEqual(config.logLevel, "debug")
        XCTAssertEqual(try parseBench(minimal + ["--direction=up"]).direction.phases, [.up])
    }

    func testBadValuesNameTheFlag() {
        assertConfigError(parsing(["bench"] + minimal + ["--direction", "sideways"]), contains: ["--direction sideways", "up, down or both"])
        assertConfigError(parsing(["bench"] + minimal + ["--seconds", "0"]), contains: ["--seconds 0 is out of range", "0.5 to 3600"])
        assertConfigError(parsing(["bench"] + minimal + ["--seconds", "soon"]), contains: ["--seconds soon", "seconds"])
        assertConfigError(parsing(["bench"] + minimal + ["--streams", "0"]), contains: ["--streams 0 is out of range", "1 to 256"])
        assertConfigError(parsing(["bench"] + minimal + ["--carriers", "17"]), contains: ["--carriers 17 is out of range", "1 to 16"])
        assertConfigError(parsing(["bench"] + minimal + ["--json=yes"]), contains: ["--json"])
        assertConfigError(parsing(["bench", "--relay", "10.10.0.2:7000", "--private-key", keys.client]), contains: ["needs --relay-public-key"])
    }

    func testFlagsOfOtherCommandsAreNamedAsSuch() {
        let error = assertConfigError(parsing(["bench"] + minimal + ["--tun", "sluice0"]), contains: ["--tun"])
        XCTAssertEqual(error, .flagOfOtherCommand("tun", command: "bench", owner: "up"))
    }

    /// `--config` reads `up`'s client file: the relay and keys; the tunnel keys are ignored, and the
    /// measurement settings come only from flags.
    func testConfigIsTheClientFileOfUp() throws {
        try dir.write("etc/keys/client.key", TestKeys.text(TestKeys.client) + "\n")
        try dir.write("etc/keys/psk.key", TestKeys.text(TestKeys.psk) + "\n")
        let path = try dir.write("etc/client.json", """
            {
              "relay": "10.10.0.2:7000",
              "relayPublicKey": "\(TestKeys.text(TestKeys.relayPublic))",
              "privateKey": "keys/client.key",
              "psk": "keys/psk.key",
              "tun": "sluice0",
              "address": ["198.18.0.1/30"],
              "route": ["10.20.0.0/24"],
              "carriers": 4,
              "logLevel": "debug"
            }
            """)
        let config = try parseBench(["--config", path])
        XCTAssertEqual(config.relay, SocketEndpoint("10.10.0.2:7000"))
        XCTAssertEqual(config.privateKey, TestKeys.client)
        XCTAssertEqual(config.psk, TestKeys.psk)
        XCTAssertEqual(config.logLevel, "debug")
        XCTAssertEqual(config.carriers, 1, "the file's carriers is for up; bench takes --carriers from the command line only")

        let overridden = try parseBench(["--config", path, "--relay", "[fd10::2]:7001", "--carriers", "3"])
        XCTAssertEqual(overridden.relay, SocketEndpoint("[fd10::2]:7001"))
        XCTAssertEqual(overridden.carriers, 3)

        // The file is still checked as up's: a typo is an error, not ignored.
        let typo = try dir.write("etc/typo.json", #"{"relya": "10.10.0.2:7000"}"#)
        assertConfigError(parsing(["bench", "--config", typo]), contains: ["relya", "relay"])
    }

    func testRelayNoBench() throws {
        let relay = ["--listen", "0.0.0.0:7000", "--private-key", keys.relay, "--allow-client", TestKeys.text(TestKeys.clientPublic)]
        XCTAssertTrue(try parseRelay(relay).benchEnabled)
        XCTAssertFalse(try parseRelay(relay + ["--no-bench"]).benchEnabled)
        let path = try dir.write("relay.json", """
            {"listen": "0.0.0.0:7000", "privateKey": "\(keys.relay)", "allowClient": ["\(TestKeys.text(TestKeys.clientPublic))"], "noBench": true}
            """)
        XCTAssertFalse(try parseRelay(["--config", path]).benchEnabled)
        assertConfigError(parsing(["relay"] + relay + ["--no-bench=1"]), contains: ["--no-bench"])
    }

    func testHelpListsTheMeasurementFlags() throws {
        guard case .help(let text) = try CommandLineParser.parse(arguments: ["bench", "--help"]) else { return XCTFail() }
        for fragment in ["--seconds N", "(default: 10)", "--direction up|down|both", "(default: both)", "--streams N",
                         "--carriers N", "(default: 1)", "--json", "--config FILE", "no root",
                         "reads `sluice up`'s JSON file and takes relay, relayPublicKey, privateKey, psk, logLevel from it"] {
            XCTAssertTrue(text.contains(fragment), "bench help lacks \(fragment)")
        }
        guard case .help(let main) = try CommandLineParser.parse(arguments: ["--help"]) else { return XCTFail() }
        XCTAssertTrue(main.contains("bench"))
    }
}
