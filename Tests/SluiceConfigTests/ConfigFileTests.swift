import SluiceConfig
import SluiceWire
import XCTest

/// `--config FILE`: JSON loading, relative key paths, overrides and every file error.
final class ConfigFileTests: XCTestCase {
    private var dir: TempDirectory!

    override func setUpWithError() throws {
        dir = try TempDirectory(self)
    }

    /// Keys in `<dir>/etc/keys/`, referred to from configs in `<dir>/etc/` by relative paths.
    private func writeKeys() throws {
        try dir.write("etc/keys/relay.key", TestKeys.text(TestKeys.relay) + "\n")
        try dir.write("etc/keys/client.key", TestKeys.text(TestKeys.client) + "\n")
        try dir.write("etc/keys/psk.key", TestKeys.text(TestKeys.psk) + "\n")
    }

    private func relayJSON(_ extra: String = "") -> String {
        """
        {
          "listen": "[::]:7000",
          "privateKey": "keys/relay.key",
          "allowClient": ["\(TestKeys.text(TestKeys.clientPublic))", "\(TestKeys.text(TestKeys.otherClientPublic))"]\(extra)
        }
        """
    }

    private func clientJSON(_ extra: String = "") -> String {
        """
        {
          "relay": "10.10.0.2:7000",
          "relayPublicKey": "\(TestKeys.text(TestKeys.relayPublic))",
          "privateKey": "keys/client.key",
          "tun": "sluice0",
          "address": ["198.18.0.1/30", "fd53::1/126"],
          "route": ["10.20.0.0/24", "fd20::/64"]\(extra)
        }
        """
    }

    func testRelayFromJSONResolvesKeysAgainstItsDirectory() throws {
        try writeKeys()
        let path = try dir.write("etc/relay.json", relayJSON(#", "psk": "keys/psk.key", "maxStreams": 64, "handshakeTimeout": 2.5, "logLevel": "debug", "proxyProtocol": true"#))
        let config = try parseRelay(["--config", path])
        XCTAssertEqual(config.listen, SocketEndpoint(address: IPAddress("::")!, port: 7000))
        XCTAssertEqual(config.privateKey, TestKeys.relay)
        XCTAssertEqual(config.allowedClients, [TestKeys.clientPublic, TestKeys.otherClientPublic])
        XCTAssertEqual(config.psk, TestKeys.psk)
        XCTAssertEqual(config.maxStreams, 64)
        XCTAssertEqual(config.handshakeTimeout, .milliseconds(2500))
        XCTAssertEqual(config.logLevel, "debug")
        XCTAssertTrue(config.proxyProtocol)
    }

    func testClientFromJSON() throws {
        try writeKeys()
        let path = try dir.write("etc/client.json", clientJSON(#", "psk": "keys/psk.key", "mtu": 1400, "carriers": 4, "fwmark": "0x100", "table": 300, "udpPath": "off""#))
        let config = try parseUp(["--config", path])
        XCTAssertEqual(config.relays, [RelayEntry(endpoint: SocketEndpoint("10.10.0.2:7000")!, publicKey: TestKeys.relayPublic)])
        XCTAssertEqual(config.privateKey, TestKeys.client)
        XCTAssertEqual(config.psk, TestKeys.psk)
        XCTAssertEqual(config.addresses, [IPPrefix("198.18.0.1/30")!, IPPrefix("fd53::1/126")!])
        XCTAssertEqual(config.routes, [IPPrefix("10.20.0.0/24")!, IPPrefix("fd20::/64")!])
        XCTAssertEqual(config.mtu, 1400)
        XCTAssertEqual(config.carriers, 4)
        XCTAssertEqual(config.fwmark, 0x100)
        XCTAssertEqual(config.table, 300)
        XCTAssertEqual(config.udpPath, .off)
    }

    func testFwmarkAsJSONNumber() throws {
        try writeKeys()
        let path = try dir.write("etc/client.json", clientJSON(#", "fwmark": 21324"#))
        XCTAssertEqual(try parseUp(["--config", path]).fwmark, 0x534c)
    }

    func testAbsoluteKeyPathStaysAbsolute() throws {
        let key = try dir.write("elsewhere/relay.key", TestKeys.text(TestKeys.relay))
        let json = relayJSON().replacingOccurrences(of: "keys/relay.key", with: key)
        let path = try dir.write("etc/relay.json", json)
        XCTAssertEqual(try parseRelay(["--config", path]).privateKey, TestKeys.relay)
    }

    func testRelativeKeyPathErrorShowsResolvedPath() throws {
        let path = try dir.write("etc/relay.json", relayJSON())
        assertConfigError(parsing(["relay", "--config", path]),
                          contains: ["private key file \(dir.path)/etc/keys/relay.key: No such file or directory"])
    }

    func testFlagsOverrideFile() throws {
        try writeKeys()
        let path = try dir.write("etc/client.json", clientJSON(#", "mtu": 1400"#))
        let other = try dir.write("other.key", TestKeys.text(TestKeys.psk))
        let config = try parseUp(["--config", path, "--mtu", "9000", "--route=10.99.0.0/16", "--private-key", other])
        XCTAssertEqual(config.mtu, 9000)
        XCTAssertEqual(config.routes, [IPPrefix("10.99.0.0/16")!], "a repeatable flag replaces the file's whole list")
        XCTAssertEqual(config.addresses.count, 2, "keys not given as flags keep the file's values")
        XCTAssertEqual(config.privateKey, TestKeys.psk, "a flag's relative path is not resolved against the file")
    }

    func testFlagsCanCompleteFile() throws {
        try writeKeys()
        let path = try dir.write("etc/relay.json", #"{ "listen": "0.0.0.0:7000", "privateKey": "keys/relay.key" }"#)
        let config = try parseRelay(["--allow-client", TestKeys.text(TestKeys.clientPublic), "--config=\(path)"])
        XCTAssertEqual(config.allowedClients, [TestKeys.clientPublic])
    }

    func testMissingSettingMentionsKey() throws {
        try writeKeys()
        let path = try dir.write("etc/client.json", #"{ "relay": "10.10.0.2:7000", "tun": "sluice0" }"#)
        assertConfigError(parsing(["up", "--config", path]), contains: ["needs --relay-public-key", "\"relayPublicKey\""])
    }

    func testUnknownKeySuggestsClosest() throws {
        let path = try dir.write("relay.json", #"{ "listne": "0.0.0.0:7000" }"#)
        let error = assertConfigError(parsing(["relay", "--config", path]),
                                      contains: ["\(path): unknown key \"listne\" — did you mean \"listen\"?"])
        XCTAssertEqual(error, .unknownKey(path: path, key: "listne", suggestion: "listen"))
        let flagName = try dir.write("r2.json", #"{ "max-streams": 3 }"#)
        assertConfigError(parsing(["relay", "--config", flagName]), contains: ["\"max-streams\"", "did you mean \"maxStreams\"?"])
        let nothingClose = try dir.write("r3.json", #"{ "colour": "blue" }"#)
        assertConfigError(parsing(["relay", "--config", nothingClose]), contains: ["unknown key \"colour\"", "configuration.md"])
    }

    func testConfigAndHelpAreNotKeys() throws {
        let path = try dir.write("relay.json", #"{ "config": "other.json" }"#)
        assertConfigError(parsing(["relay", "--config", path]), contains: ["unknown key \"config\""])
    }

    func testKeyOfOtherCommandAsksAboutTheFile() throws {
        let path = try dir.write("client.json", #"{ "listen": "0.0.0.0:7000" }"#)
        let error = assertConfigError(parsing(["up", "--config", path]), contains: [path, "\"listen\"", "sluice relay", "right config file"])
        XCTAssertEqual(error, .keyOfOtherCommand(path: path, key: "listen", command: "up", owner: "relay"))
    }

    func testWrongTypes() throws {
        try writeKeys()
        let cases: [(String, [String])] = [
            (#", "mtu": "1400""#, ["key \"mtu\" must be a number, got a string"]),
            (#", "mtu": true"#, ["key \"mtu\" must be a number, got a boolean"]),
            (#", "carriers": null"#, ["key \"carriers\" must be a number, got null"]),
            (#", "tun": 5"#, ["key \"tun\" must be a string, got a number"]),
            (#", "fwmark": [1]"#, ["key \"fwmark\"", "a number or a string", "got an array"]),
            (#", "privateKey": {"file": "x"}"#, ["key \"privateKey\" must be a string, got an object"]),
        ]
        for (extra, fragments) in cases {
            // `extra` repeats some of the base keys; JSONSerialization keeps the last occurrence.
            let path = try dir.write("etc/client.json", clientJSON(extra))
            let error = assertConfigError(parsing(["up", "--config", path]), contains: [path + ": "] + fragments)
            guard case .wrongType = error else { return XCTFail("\(extra): \(String(describing: error))") }
        }
    }

    func testRepeatableKeysMustBeArraysOfStrings() throws {
        let notArray = try dir.write("r1.json", #"{ "allowClient": "abc" }"#)
        assertConfigError(parsing(["relay", "--config", notArray]),
                          contains: ["key \"allowClient\" must be an array of strings, got a string"])
        let badElement = try dir.write("r2.json", #"{ "allowClient": ["abc", 7] }"#)
        let error = assertConfigError(parsing(["relay", "--config", badElement]),
                                      contains: ["\(badElement): key \"allowClient\" element 2 must be a string, got a number"])
        XCTAssertEqual(error, .wrongElementType(path: badElement, key: "allowClient", index: 1, expected: "a string", got: "a number"))
    }

    func testValueErrorsNameFileAndKey() throws {
        try writeKeys()
        let mtu = try dir.write("etc/client.json", clientJSON(#", "mtu": 99999"#))
        assertConfigError(parsing(["up", "--config", mtu]), contains: ["\(mtu): key \"mtu\" = 99999 is out of range", "1280 to 65535"])
        let fraction = try dir.write("etc/client.json", clientJSON(#", "mtu": 1400.5"#))
        assertConfigError(parsing(["up", "--config", fraction]), contains: ["key \"mtu\" = 1400.5 is not a whole number"])
        let route = try dir.write("etc/client.json", clientJSON().replacingOccurrences(of: "\"fd20::/64\"", with: "\"fd20::1/64\""))
        let error = assertConfigError(parsing(["up", "--config", route]),
                                      contains: ["\(route): key \"route\" element 2 = fd20::1/64", "did you mean fd20::/64?"])
        XCTAssertEqual(error, .routeHasHostBits(.file(path: route, key: "route", index: 1), value: "fd20::1/64", suggestion: "fd20::/64"))
        let key = try dir.write("etc/client.json", clientJSON().replacingOccurrences(of: TestKeys.text(TestKeys.relayPublic), with: "short"))
        assertConfigError(parsing(["up", "--config", key]), contains: ["\(key): key \"relayPublicKey\" \"short\" is not base64"])
    }

    func testInvalidJSONSaysWhere() throws {
        let path = try dir.write("client.json", "{\n  \"mtu\": 1400,\n  \"tun\": sluice0\n}\n")
        let error = assertConfigError(parsing(["up", "--config", path]), contains: ["\(path) is not valid JSON", "line 3"])
        guard case .configFileInvalidJSON = error else { return XCTFail("\(String(describing: error))") }
    }

    func testInvalidJSONNamesWhatWasExpected() throws {
        let path = try dir.write("client.json", "{\n  \"mtu\": 1400,\n}\n")
        assertConfigError(parsing(["up", "--config", path]),
                          contains: ["\(path) is not valid JSON: expected a key in double quotes after ',', found '}' (JSON allows no comma before '}') at line 3, column 1."])
    }

    /// Numbers reach the shared checks as a flag would carry them; ones no integer or double holds are
    /// quoted as written.
    func testNumberForms() throws {
        try writeKeys()
        let exponent = try dir.write("etc/client.json", clientJSON(#", "mtu": 1.4e3, "carriers": 3.0"#))
        let config = try parseUp(["--config", exponent])
        XCTAssertEqual(config.mtu, 1400)
        XCTAssertEqual(config.carriers, 3)
        let long = try dir.write("etc/client.json", clientJSON(#", "mtu": 123456789012345678901234567890"#))
        assertConfigError(parsing(["up", "--config", long]), contains: ["key \"mtu\" = 123456789012345678901234567890 is out of range"])
        let huge = try dir.write("etc/client.json", clientJSON(#", "mtu": 1e400"#))
        assertConfigError(parsing(["up", "--config", huge]), contains: ["key \"mtu\" = 1e400 is not a whole number"])
    }

    func testEmptyConfigFile() throws {
        let path = try dir.write("client.json", "\n")
        assertConfigError(parsing(["up", "--config", path]), contains: ["\(path) is not valid JSON: the file is empty"])
    }

    func testTopLevelMustBeAnObject() throws {
        let path = try dir.write("client.json", #"["relay", "10.10.0.2:7000"]"#)
        let error = assertConfigError(parsing(["up", "--config", path]), contains: [path, "JSON object", "got an array"])
        XCTAssertEqual(error, .configFileNotObject(path: path, got: "an array"))
    }

    func testUnreadableConfigFileNamesIt() {
        let error = assertConfigError(parsing(["relay", "--config", "no/such/relay.json"]),
                                      contains: ["config file no/such/relay.json: No such file or directory"])
        XCTAssertEqual(error, .configFileUnreadable(path: "no/such/relay.json", reason: "No such file or directory"))
    }

    func testConfigGivenTwice() throws {
        let path = try dir.write("relay.json", "{}")
        assertConfigError(parsing(["relay", "--config", path, "--config", path]), contains: ["--config", "more than once"])
    }

    func testCommandsWithoutConfigRejectIt() {
        assertConfigError(parsing(["keygen", "--config", "x.json"]), contains: ["sluice keygen", "--config"])
    }
}
