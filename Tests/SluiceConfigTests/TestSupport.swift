import Foundation
import SluiceConfig
import XCTest

/// A scratch directory for key and config files, removed when the test ends.
final class TempDirectory {
    let path: String

    init(_ test: XCTestCase) throws {
        var template = Array((URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("sluice-config-XXXXXX").path).utf8CString)
        guard let made = mkdtemp(&template) else { throw XCTSkip("mkdtemp failed") }
        path = String(cString: made)
        let path = self.path
        test.addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Writes `text` to `name` (creating subdirectories) with `mode`; returns the full path.
    @discardableResult
    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let full = path + "/" + name
        let directory = (full as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: full))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: full)
        return full
    }
}

/// Fixed keys: byte patterns whose base64 forms are easy to tell apart.
enum TestKeys {
    static let client = [UInt8](repeating: 0x11, count: 32)
    static let relay = [UInt8](repeating: 0x22, count: 32)
    static let psk = [UInt8](repeating: 0x33, count: 32)
    static let clientPublic = [UInt8](0..<32)
    static let relayPublic = [UInt8](32..<64)
    static let otherClientPublic = [UInt8](64..<96)

    /// Base64 by Foundation's encoder, independent of the code under test.
    static func text(_ key: [UInt8]) -> String {
        Data(key).base64EncodedString()
    }
}

/// Runs `body`, which must throw a `ConfigError` whose message contains every fragment; returns the
/// error so a test can also check its case.
@discardableResult
func assertConfigError<T>(_ body: () throws(ConfigError) -> T, contains fragments: [String],
                          file: StaticString = #filePath, line: UInt = #line) -> ConfigError? {
    do {
        let value = try body()
        XCTFail("expected a ConfigError, got \(value)", file: file, line: line)
        return nil
    } catch {
        let message = error.description
        for fragment in fragments where !message.contains(fragment) {
            XCTFail("message does not contain \"\(fragment)\": \(message)", file: file, line: line)
        }
        XCTAssertTrue(message.hasSuffix(".") || message.hasSuffix("?"), "not a sentence: \(message)", file: file, line: line)
        return error
    }
}

/// Key files for the fixed test keys, mode 0600, in `dir`.
struct KeyFiles {
    let client: String
    let relay: String
    let psk: String

    init(in dir: TempDirectory) throws {
        client = try dir.write("client.key", TestKeys.text(TestKeys.client) + "\n")
        relay = try dir.write("relay.key", TestKeys.text(TestKeys.relay) + "\n")
        psk = try dir.write("psk.key", TestKeys.text(TestKeys.psk) + "\n")
    }
}

/// Parses and expects `sluice relay`.
func parseRelay(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> RelayConfig {
    let command = try CommandLineParser.parse(arguments: ["relay"] + arguments)
    guard case .relay(let config) = command else {
        XCTFail("expected relay, got \(command)", file: file, line: line)
        throw XCTSkip("not a relay command")
    }
    return config
}

/// Parses and expects `sluice up`.
func parseUp(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> ClientConfig {
    let command = try CommandLineParser.parse(arguments: ["up"] + arguments)
    guard case .up(let config) = command else {
        XCTFail("expected up, got \(command)", file: file, line: line)
        throw XCTSkip("not an up command")
    }
    return config
}

/// `body` wrapped for `assertConfigError`: `parse(arguments:)` discarding the result.
func parsing(_ arguments: [String]) -> () throws(ConfigError) -> Command {
    { () throws(ConfigError) in try CommandLineParser.parse(arguments: arguments) }
}

/// A test case with a scratch directory and the three key files in it, made fresh for each test.
class KeyFilesTestCase: XCTestCase {
    var keys: KeyFiles!
    var dir: TempDirectory!

    override func setUpWithError() throws {
        try super.setUpWithError()
        dir = try TempDirectory(self)
        keys = try KeyFiles(in: dir)
    }
}
