import SluiceConfig
import SluiceWire
import XCTest

/// `sluice socks` from flags and files.
final class ProxyCommandTests: KeyFilesTestCase {
    private var relay: [String] {
        ["--relay", "10.10.0.2:7000", "--relay-public-key", TestKeys.text(TestKeys.relayPublic), "--private-key", keys.client]
    }

    private func parseSocks(_ arguments: [String]) throws -> ProxyConfig {
        guard case .socks(let config) = try CommandLineParser.parse(arguments: ["socks"] + arguments) else {
            XCTFail("not socks")
            throw XCTSkip("not socks")
        }
        return config
    }

    func testDefaultsToLoopbackWithoutAuthentication() throws {
        let config = try parseSocks(relay)
        XCTAssertEqual(config.listen, SocketEndpoint("127.0.0.1:1080"))
        XCTAssertEqual(config.carriers, 2)
        XCTAssertTrue(config.users.isEmpty)
        XCTAssertEqual(try parseSocks(relay + ["--listen", "[::1]:9050"]).listen, SocketEndpoint("[::1]:9050"))
    }

    func testNonLoopbackNeedsAnAuthFile() throws {
        let error = assertConfigError(parsing(["socks", "--listen", "0.0.0.0:1080"] + relay),
                                      contains: ["--listen 0.0.0.0:1080", "not a loopback address", "--auth-file"])
        XCTAssertEqual(error, .openProxy(.flag("listen"), value: "0.0.0.0:1080"))
        let users = try dir.write("users", "# the team\nalice:pa:ss\n\nbob:hunter2\r\n")
        let config = try parseSocks(["--listen", "0.0.0.0:1080", "--auth-file", users] + relay)
        XCTAssertEqual(config.users.map(\.user), [Array("alice".utf8), Array("bob".utf8)])
        XCTAssertEqual(config.users.map(\.password), [Array("pa:ss".utf8), Array("hunter2".utf8)], "first colon splits; CRLF ends a line")
        XCTAssertEqual(config.warnings, [])
    }

    func testBadAuthFiles() throws {
        let noColon = try dir.write("no-colon", "alice\n")
        assertConfigError(parsing(["socks", "--auth-file", noColon] + relay), contains: ["auth file", "line 1", "user:password"])
        let emptyPassword = try dir.write("empty", "# x\nalice:\n")
        assertConfigError(parsing(["socks", "--auth-file", emptyPassword] + relay), contains: ["line 2"])
        let nobody = try dir.write("nobody", "# nobody here\n")
        assertConfigError(parsing(["socks", "--auth-file", nobody] + relay), contains: ["holds no user:password line"])
        let open = try dir.write("open", "alice:pw\n", mode: 0o644)
        let error = assertConfigError(parsing(["socks", "--auth-file", open] + relay),
                                      contains: ["auth file \(open)", "mode 0644", "chmod 600 \(open)"])
        XCTAssertEqual(error, .keyFileExposed(what: "auth file", path: open, permissions: 0o644))
    }

    func testFromAConfigFile() throws {
        let users = try dir.write("users", "alice:pw\n")
        let file = try dir.write("socks.json", """
            {"listen": "10.0.0.1:1080", "relay": "10.10.0.2:7000", "relayPublicKey": "\(TestKeys.text(TestKeys.relayPublic))",
             "privateKey": "\(keys.client)", "authFile": "\(users)", "carriers": 1}
            """)
        let config = try parseSocks(["--config", file])
        XCTAssertEqual(config.listen, SocketEndpoint("10.0.0.1:1080"))
        XCTAssertEqual(config.carriers, 1)
        XCTAssertEqual(config.users.count, 1)
    }
}
