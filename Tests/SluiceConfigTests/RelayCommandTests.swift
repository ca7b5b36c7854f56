import SluiceConfig
import SluiceWire
import XCTest

/// `sluice relay` from flags.
final class RelayCommandTests: KeyFilesTestCase {
    private var minimal: [String] {
        ["--listen", "0.0.0.0:7000", "--private-key", keys.relay, "--allow-client", TestKeys.text(TestKeys.clientPublic)]
    }

    func testContractExampleWithDefaults() throws {
        let config = try parseRelay(minimal + ["--allow-client", TestKeys.text(TestKeys.otherClientPublic), "--psk", keys.psk])
        XCTAssertEqual(config.listen, SocketEndpoint("0.0.0.0:7000"))
        XCTAssertEqual(config.privateKey, TestKeys.relay)
        XCTAssertEqual(config.allowedClients, [TestKeys.clientPublic, TestKeys.otherClientPublic])
        XCTAssertEqual(config.psk, TestKeys.psk)
        XCTAssertEqual(config.maxStreams, 1024)
        XCTAssertEqual(config.handshakeTimeout, .seconds(5))
        XCTAssertEqual(config.logLevel, "info")
        XCTAssertEqual(config.warnings, [])
    }

    func testEveryOptionInEqualsForm() throws {
        let config = try parseRelay([
            "--listen=[::]:7000", "--private-key=\(keys.relay)", "--allow-client=\(TestKeys.text(TestKeys.clientPublic))",
            "--max-streams=10", "--handshake-timeout=2.5", "--log-level=DEBUG",
        ])
        XCTAssertEqual(config.listen, SocketEndpoint(address: IPAddress("::")!, port: 7000))
        XCTAssertNil(config.psk)
        XCTAssertEqual(config.maxStreams, 10)
        XCTAssertEqual(config.handshakeTimeout, .milliseconds(2500))
        XCTAssertEqual(config.logLevel, "debug")
    }

    func testProxyProtocolIsOffUnlessAsked() throws {
        XCTAssertFalse(try parseRelay(minimal).proxyProtocol)
        XCTAssertTrue(try parseRelay(minimal + ["--proxy-protocol"]).proxyProtocol)
    }

    func testBusyPollIsOffUnlessAskedAndBounded() throws {
        XCTAssertEqual(try parseRelay(minimal).busyPollMicroseconds, 0)
        XCTAssertEqual(try parseRelay(minimal + ["--busy-poll", "200"]).busyPollMicroseconds, 200)
        assertConfigError(parsing(["relay"] + minimal + ["--busy-poll", "10001"]), contains: ["--busy-poll", "10001"])
        assertConfigError(parsing(["relay"] + minimal + ["--busy-poll", "-1"]), contains: ["--busy-poll"])
    }

    func testWarnMeansWarning() throws {
        XCTAssertEqual(try parseRelay(minimal + ["--log-level", "warn"]).logLevel, "warning")
    }

    func testDuplicateClientKeysCollapse() throws {
        let key = TestKeys.text(TestKeys.clientPublic)
        XCTAssertEqual(try parseRelay(minimal + ["--allow-client", key]).allowedClients, [TestKeys.clientPublic])
    }

    func testNeedsAllowClient() {
        let error = assertConfigError(parsing(["relay", "--listen", "0.0.0.0:7000", "--private-key", keys.relay]),
                                      contains: ["sluice relay needs --allow-client", "\"allowClient\""])
        XCTAssertEqual(error, .missingSetting(flag: "allow-client", key: "allowClient", command: "relay"))
    }

    func testNeedsListenAndPrivateKey() {
        let client = TestKeys.text(TestKeys.clientPublic)
        assertConfigError(parsing(["relay", "--private-key", keys.relay, "--allow-client", client]), contains: ["needs --listen"])
        assertConfigError(parsing(["relay", "--listen", "0.0.0.0:7000", "--allow-client", client]), contains: ["needs --private-key"])
    }

    func testBadListenEndpoints() {
        let rest = Array(minimal.dropFirst(2))
        assertConfigError(parsing(["relay", "--listen", "0.0.0.0"] + rest), contains: ["--listen 0.0.0.0", "IP address and port"])
        assertConfigError(parsing(["relay", "--listen", "::7000"] + rest), contains: ["--listen ::7000", "in brackets"])
        assertConfigError(parsing(["relay", "--listen", "localhost:7000"] + rest), contains: ["localhost:7000", "host names"])
        assertConfigError(parsing(["relay", "--listen", "0.0.0.0:0"] + rest), contains: ["--listen 0.0.0.0:0", "port 0"])
        assertConfigError(parsing(["relay", "--listen", "0.0.0.0:70000"] + rest), contains: ["--listen 0.0.0.0:70000"])
    }

    func testMaxStreamsChecks() {
        let error = assertConfigError(parsing(["relay"] + minimal + ["--max-streams", "0"]),
                                      contains: ["--max-streams 0 is out of range", "1 to 65536"])
        XCTAssertEqual(error, .outOfRange(.flag("max-streams"), value: "0", allowed: "1 to 65536"))
        assertConfigError(parsing(["relay"] + minimal + ["--max-streams", "many"]), contains: ["--max-streams many", "whole number"])
        assertConfigError(parsing(["relay"] + minimal + ["--max-streams", "0x10"]), contains: ["--max-streams 0x10", "whole number"])
        assertConfigError(parsing(["relay"] + minimal + ["--max-streams", "99999999999999999999999"]), contains: ["out of range"])
    }

    func testHandshakeTimeoutChecks() {
        assertConfigError(parsing(["relay"] + minimal + ["--handshake-timeout", "0"]),
                          contains: ["--handshake-timeout 0 is out of range", "0.1 to 300 seconds"])
        assertConfigError(parsing(["relay"] + minimal + ["--handshake-timeout", "5s"]),
                          contains: ["--handshake-timeout 5s", "seconds such as 5"])
        assertConfigError(parsing(["relay"] + minimal + ["--handshake-timeout", "nan"]), contains: ["--handshake-timeout nan"])
    }

    func testDestinationPolicyFlags() throws {
        let config = try parseRelay(minimal + [
            "--allow-destination", "169.254.169.254/32", "--allow-destination", "127.0.0.0/8",
            "--allow-destination", "169.254.169.254/32", "--deny-destination", "10.0.0.0/8", "--deny-destination", "fd00::/8",
        ])
        XCTAssertEqual(config.allowDestinations, [IPPrefix("169.254.169.254/32")!, IPPrefix("127.0.0.0/8")!])
        XCTAssertEqual(config.denyDestinations, [IPPrefix("10.0.0.0/8")!, IPPrefix("fd00::/8")!])
        XCTAssertEqual(try parseRelay(minimal).allowDestinations, [])
        XCTAssertEqual(try parseRelay(minimal).denyDestinations, [])

        assertConfigError(parsing(["relay"] + minimal + ["--deny-destination", "10.0.0.1/8"]),
                          contains: ["--deny-destination 10.0.0.1/8 has bits set beyond its prefix length", "10.0.0.0/8"])
        assertConfigError(parsing(["relay"] + minimal + ["--allow-destination", "metadata"]),
                          contains: ["--allow-destination metadata is not a prefix"])
        let error = assertConfigError(parsing(["relay"] + minimal + ["--allow-destination", "10.0.0.0/8", "--deny-destination", "10.0.0.0/8"]),
                                      contains: ["--deny-destination 10.0.0.0/8 is allowed by --allow-destination as well"])
        XCTAssertEqual(error, .allowedAndDenied(.flag("deny-destination"), value: "10.0.0.0/8", other: .flag("allow-destination")))
    }

    func testMaxStreamRate() throws {
        XCTAssertEqual(try parseRelay(minimal).maxStreamRate, 5_000)
        XCTAssertEqual(try parseRelay(minimal + ["--max-stream-rate", "500"]).maxStreamRate, 500)
        assertConfigError(parsing(["relay"] + minimal + ["--max-stream-rate", "0"]), contains: ["--max-stream-rate 0 is out of range"])
    }

    func testMaxPendingHandshakes() throws {
        XCTAssertEqual(try parseRelay(minimal).maxPendingHandshakes, 256)
        XCTAssertEqual(try parseRelay(minimal + ["--max-pending-handshakes", "10"]).maxPendingHandshakes, 10)
        assertConfigError(parsing(["relay"] + minimal + ["--max-pending-handshakes", "0"]),
                          contains: ["--max-pending-handshakes 0 is out of range", "1 to 65536"])
    }

    func testLogLevelCheck() {
        assertConfigError(parsing(["relay"] + minimal + ["--log-level", "verbose"]),
                          contains: ["--log-level verbose", "error, warning, info, debug, trace"])
    }

    func testBadClientKeysNameTheFlag() {
        let base = ["relay", "--listen", "0.0.0.0:7000", "--private-key", keys.relay]
        let error = assertConfigError(parsing(base + ["--allow-client", "not-a-key!"]), contains: ["--allow-client \"not-a-key!\" is not base64"])
        guard case .invalidKey(source: "--allow-client \"not-a-key!\"", problem: .notBase64) = error else { return XCTFail("\(String(describing: error))") }
        let short = TestKeys.text([UInt8](repeating: 9, count: 31))
        assertConfigError(parsing(base + ["--allow-client", short]), contains: ["--allow-client \"\(short)\" decodes to 31 bytes, a key is 32"])
        assertConfigError(parsing(base + ["--allow-client", TestKeys.text([UInt8](repeating: 0, count: 32))]),
                          contains: ["--allow-client is all zeros"])
        assertConfigError(parsing(base + ["--allow-client", ""]), contains: ["--allow-client \"\" is empty"])
    }

    func testKeyFileGivenWhereKeyTextBelongs() throws {
        let pub = try dir.write("client.pub", TestKeys.text(TestKeys.clientPublic))
        let error = assertConfigError(parsing(["relay", "--listen", "0.0.0.0:7000", "--private-key", keys.relay, "--allow-client", pub]),
                                      contains: ["--allow-client takes the base64 key text itself", pub, "$(cat"])
        XCTAssertEqual(error, .keyGivenAsFileName(.flag("allow-client"), path: pub))
    }

    func testMissingPrivateKeyFileNamesIt() {
        let client = TestKeys.text(TestKeys.clientPublic)
        assertConfigError(parsing(["relay", "--listen", "0.0.0.0:7000", "--private-key", "nope/relay.key", "--allow-client", client]),
                          contains: ["private key file nope/relay.key: No such file or directory"])
        assertConfigError(parsing(["relay"] + minimal + ["--psk", "nope/psk.key"]),
                          contains: ["pre-shared key file nope/psk.key: No such file or directory"])
    }

    func testExposedKeyFilesAreRefused() throws {
        let loose = try dir.write("loose.key", TestKeys.text(TestKeys.relay), mode: 0o644)
        let error = assertConfigError(parsing(["relay", "--listen", "0.0.0.0:7000", "--private-key", loose,
                                               "--allow-client", TestKeys.text(TestKeys.clientPublic), "--psk", keys.psk]),
                                      contains: ["private key file \(loose)", "mode 0644", "chmod 600 \(loose)"])
        XCTAssertEqual(error, .keyFileExposed(what: "private key file", path: loose, permissions: 0o644))
        let loosePSK = try dir.write("loose.psk", TestKeys.text(TestKeys.psk), mode: 0o640)
        assertConfigError(parsing(["relay"] + minimal + ["--psk", loosePSK]),
                          contains: ["pre-shared key file \(loosePSK)", "mode 0640", "chmod 600 \(loosePSK)"])
    }
}
