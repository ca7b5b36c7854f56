@testable import SluiceConfig
import XCTest

/// The help texts and docs/configuration.md cover every flag.
final class UsageTests: XCTestCase {
    private func help(_ command: String) throws -> String {
        guard case .help(let text) = try CommandLineParser.parse(arguments: [command, "--help"]) else {
            XCTFail("no help for \(command)")
            return ""
        }
        return text
    }

    func testMainUsageListsCommands() throws {
        guard case .help(let text) = try CommandLineParser.parse(arguments: ["--help"]) else { return XCTFail() }
        for word in ["keygen", "pubkey", "relay", "up", "--version", "--help"] {
            XCTAssertTrue(text.contains(word), "missing \(word)")
        }
    }

    func testEveryFlagIsListedWithItsDefault() throws {
        for command in CommandSpec.all {
            let text = try help(command.name)
            for flag in command.flags {
                XCTAssertTrue(text.contains("--\(flag.name)"), "\(command.name) help lacks --\(flag.name)")
                if case .optional(let value?) = flag.presence {
                    XCTAssertTrue(text.contains("(default: \(value))"), "\(command.name) help lacks the default of --\(flag.name)")
                }
            }
        }
    }

    func testDefaultsShownAreTheContract() throws {
        let relay = try help("relay")
        for fragment in ["--max-streams N", "(default: 1024)", "(default: 5)", "(default: info)", "[::]:7000", "(at least one)"] {
            XCTAssertTrue(relay.contains(fragment), "relay help lacks \(fragment)")
        }
        let up = try help("up")
        for fragment in ["(default: 1500)", "(default: 2)", "(default: 0x534c)", "(default: 21324)", "1280..65535", "1..16",
                         "--relay-public-key KEY", "(required)"] {
            XCTAssertTrue(up.contains(fragment), "up help lacks \(fragment)")
        }
    }

    func testHelpLinesAreAligned() throws {
        for command in CommandSpec.all {
            let lines = try help(command.name).split(separator: "\n").filter { $0.hasPrefix("  -") }
            XCTAssertEqual(lines.count, command.flags.count, command.name)
            // The column where each description starts: after the first run of two or more spaces.
            let columns = lines.map { line -> Int in
                let gap = line.dropFirst(2).range(of: "  ")!.lowerBound
                return line.distance(from: line.startIndex, to: line[gap...].firstIndex { $0 != " " }!)
            }
            XCTAssertEqual(Set(columns).count, 1, "\(command.name): \(lines)")
        }
    }

    private func configurationDoc() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
    }

    func testConfigurationDocCoversEveryFlagAndKey() throws {
        let doc = try configurationDoc()
        for command in CommandSpec.all where command.acceptsConfigFile {
            for flag in command.flags {
                XCTAssertTrue(doc.contains("`--\(flag.name)"), "docs/configuration.md lacks --\(flag.name)")
                if flag.inConfigFile {
                    XCTAssertTrue(doc.contains("`\(flag.jsonKey)`"), "docs/configuration.md lacks key \(flag.jsonKey)")
                }
            }
        }
    }

    func testDocumentedExamplesParse() throws {
        let blocks = try configurationDoc().components(separatedBy: "```json\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        XCTAssertEqual(blocks.count, 2)
        let dir = try TempDirectory(self)
        for name in ["relay.key", "client.key", "psk.key"] {
            try dir.write("keys/" + name, TestKeys.text(TestKeys.client))
        }
        let relay = try parseRelay(["--config", try dir.write("relay.json", blocks[0])])
        XCTAssertEqual(relay.allowedClients.count, 2)
        XCTAssertEqual(relay.maxStreams, 2048)
        let client = try parseUp(["--config", try dir.write("client.json", blocks[1])])
        XCTAssertEqual(client.routes.count, 2)
        XCTAssertEqual(client.fwmark, ClientConfig.defaultFwmark)
        XCTAssertEqual(client.warnings, [])
    }
}
