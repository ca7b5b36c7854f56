import SluiceConfig
import SluiceWire
import XCTest

/// `sluice up --upstream socks5://…` instead of a relay.
final class ClientUpstreamTests: KeyFilesTestCase {
    private let tunnel = ["--tun", "sluice0", "--address", "198.18.0.1/30"]

    func testSocksURLWithAndWithoutCredentials() throws {
        let plain = try parseUp(["--upstream", "socks5://10.10.0.2:1080"] + tunnel)
        XCTAssertEqual(plain.upstream, SocksUpstreamURL(endpoint: SocketEndpoint("10.10.0.2:1080")!))
        XCTAssertEqual(plain.relays, [])
        XCTAssertNil(plain.privateKey)

        let user = try parseUp(["--upstream", "SOCKS5://al%40ce:p%3Ass:w@[fd10::2]:1080/"] + tunnel)
        XCTAssertEqual(user.upstream?.endpoint, SocketEndpoint("[fd10::2]:1080"))
        XCTAssertEqual(user.upstream?.username, Array("al@ce".utf8))
        XCTAssertEqual(user.upstream?.password, Array("p:ss:w".utf8), "the first colon splits; percent escapes decode")
        XCTAssertEqual(user.upstream?.description, "socks5://al@ce@[fd10::2]:1080", "never the password")
    }

    func testSocksUpstreamFromAConfigFile() throws {
        let path = try dir.write("client.json", """
            {"upstream": "socks5://bob:secret@10.10.0.2:1080", "tun": "sluice0", "address": ["198.18.0.1/30"], "route": ["10.20.0.0/24"]}
            """)
        let config = try parseUp(["--config", path])
        XCTAssertEqual(config.upstream?.username, Array("bob".utf8))
        XCTAssertEqual(config.routes, [IPPrefix("10.20.0.0/24")!])
    }

    func testBothOrNeitherIsAnError() {
        let both = ["--upstream", "socks5://10.10.0.2:1080", "--relay", "10.10.0.2:7000"] + tunnel
        XCTAssertEqual(assertConfigError(parsing(["up"] + both), contains: ["--relay", "--upstream", "cannot be given together"]),
                       .conflicting(.flag("relay"), .flag("upstream")))
        let key = ["--upstream", "socks5://10.10.0.2:1080", "--private-key", keys.client] + tunnel
        assertConfigError(parsing(["up"] + key), contains: ["--private-key", "--upstream"])
        assertConfigError(parsing(["up"] + tunnel), contains: ["needs a way out", "--relay", "--upstream socks5://HOST:PORT"])
    }

    func testBadURLsNameTheProblemAndNeverThePassword() {
        let cases: [(String, String)] = [
            ("http://10.10.0.2:1080", "socks5://HOST:PORT"),
            ("socks5://proxy.example:1080", "host names are not resolved"),
            ("socks5://10.10.0.2", "IP address and port"),
            ("socks5://10.10.0.2:0", "IP address and port"),
            ("socks5://user@10.10.0.2:1080", "USER:PASSWORD@"),
            ("socks5://user:@10.10.0.2:1080", "1 to 255 bytes"),
            ("socks5://user:s3cr%zzet@10.10.0.2:1080", "percent-encode"),
        ]
        for (url, expected) in cases {
            let error = assertConfigError(parsing(["up", "--upstream", url] + tunnel), contains: [expected])
            XCTAssertFalse("\(error.map { "\($0)" } ?? "")".contains("s3cr"), "the password is not repeated: \(url)")
        }
    }

    func testUpUsageShowsBothWaysOut() throws {
        guard case .help(let text) = try CommandLineParser.parse(arguments: ["up", "--help"]) else { return XCTFail("no help") }
        XCTAssertTrue(text.contains("--upstream socks5://[USER:PASSWORD@]HOST:PORT --tun NAME"), text)
        XCTAssertTrue(text.contains("(unless --upstream)"), text)
    }
}
