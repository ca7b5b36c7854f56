import SluiceConfig
import SluiceWire
import XCTest

/// Several relays: `--relays ENDPOINT,KEY` (repeatable), the JSON `relays` list of objects,
/// `--relay-policy`, for `up` and `socks`; and what is refused.
final class RelayListTests: KeyFilesTestCase {
    private let tunnel = ["--tun", "sluice0", "--address", "198.18.0.1/30"]
    private var keyA: String { TestKeys.text(TestKeys.relayPublic) }
    private var keyB: String { TestKeys.text(TestKeys.otherClientPublic) }
    private var entries: [RelayEntry] {
        [RelayEntry(endpoint: SocketEndpoint("10.10.0.2:7000")!, publicKey: TestKeys.relayPublic),
         RelayEntry(endpoint: SocketEndpoint("[fd10::3]:7000")!, publicKey: TestKeys.otherClientPublic)]
    }
    private var two: [String] { ["--relays", "10.10.0.2:7000,\(keyA)", "--relays", "[fd10::3]:7000,\(keyB)", "--private-key", keys.client] }

    func testUpTakesAListInOrderWithAPolicy() throws {
        let config = try parseUp(two + tunnel)
        XCTAssertEqual(config.relays, entries)
        XCTAssertEqual(config.relayPolicy, "failover", "the default")
        XCTAssertEqual(try parseUp(two + tunnel + ["--relay-policy", "Spread"]).relayPolicy, "spread")
        XCTAssertEqual(try parseUp(Array(two[0..<2]) + ["--private-key", keys.client] + tunnel).relays, [entries[0]], "a list of one")
    }

    func testSocksTakesTheSameWithItsPings() throws {
        guard case .socks(let config) = try CommandLineParser.parse(arguments: ["socks"] + two + ["--relay-policy", "spread", "--ping-interval", "0.5",
                                                                                                  "--ping-misses", "2"]) else {
            return XCTFail("not socks")
        }
        XCTAssertEqual(config.relays, entries)
        XCTAssertEqual(config.relayPolicy, "spread")
        XCTAssertEqual(config.pingInterval, .milliseconds(500))
        XCTAssertEqual(config.pingMisses, 2)
    }

    func testJSONListOfObjects() throws {
        let path = try dir.write("client.json", """
            {"relays": [{"endpoint": "10.10.0.2:7000", "publicKey": "\(keyA)"}, {"publicKey": "\(keyB)", "endpoint": "[fd10::3]:7000"}],
             "relayPolicy": "spread", "privateKey": "client.key", "tun": "sluice0", "address": ["198.18.0.1/30"]}
            """)
        let config = try parseUp(["--config", path])
        XCTAssertEqual(config.relays, entries)
        XCTAssertEqual(config.relayPolicy, "spread")
    }

    func testJSONErrorsNameTheElement() throws {
        let cases: [(String, [String])] = [
            (#""relays": "10.10.0.2:7000""#, ["\"relays\"", "an array of objects", "a string"]),
            (#""relays": ["10.10.0.2:7000,\#(keyA)"]"#, ["element 1", "{\"endpoint\"", "a string"]),
            (#""relays": [{"endpoint": "10.10.0.2:7000"}]"#, ["element 1", "an object with \"endpoint\""]),
            (#""relays": [{"endpoint": "10.10.0.2:7000", "publicKey": "\#(keyA)", "weight": 2}]"#, ["\"endpoint\", \"publicKey\", \"weight\""]),
            (#""relays": [{"endpoint": "10.10.0.2", "publicKey": "\#(keyA)"}]"#, ["\"relays\" element 1", "10.10.0.2", "IP address and port"]),
            (#""relays": [{"endpoint": "10.10.0.2:7000", "publicKey": "nope"}]"#, ["\"relays\" element 1"]),
        ]
        for (json, fragments) in cases {
            let path = try dir.write("bad.json", "{\(json), \"privateKey\": \"client.key\", \"tun\": \"sluice0\", \"address\": [\"198.18.0.1/30\"]}")
            assertConfigError(parsing(["up", "--config", path]), contains: fragments)
        }
    }

    func testRefusedCombinations() {
        assertConfigError(parsing(["up", "--relay", "10.10.0.9:7000"] + two + tunnel), contains: ["--relay", "--relays"])
        assertConfigError(parsing(["up", "--relay-public-key", keyA] + two + tunnel), contains: ["--relay-public-key", "--relays"])
        assertConfigError(parsing(["up", "--upstream", "socks5://10.10.0.2:1080", "--relays", "10.10.0.2:7000,\(keyA)"] + tunnel),
                          contains: ["--relays", "--upstream"])
        assertConfigError(parsing(["up", "--relays", "10.10.0.2:7000", "--private-key", keys.client] + tunnel),
                          contains: ["--relays 10.10.0.2:7000", "10.10.0.2:7000,KEY"])
        assertConfigError(parsing(["up", "--relays", "10.10.0.2:7000,\(keyA)", "--relays", "10.10.0.2:7000,\(keyB)", "--private-key", keys.client] + tunnel),
                          contains: ["each relay once", "--relays names it already"])
        assertConfigError(parsing(["up"] + two + tunnel + ["--relay-policy", "random"]), contains: ["--relay-policy random", "failover or spread"])
        assertConfigError(parsing(["up", "--relays", "10.10.0.2:7000,\(keyA)"] + tunnel), contains: ["needs --private-key"])
        assertConfigError(parsing(["socks", "--private-key", keys.client]), contains: ["needs --relay"])
    }
}
