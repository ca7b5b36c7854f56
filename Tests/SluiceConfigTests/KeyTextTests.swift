import Foundation
import SluiceConfig
import XCTest

final class KeyTextTests: XCTestCase {
    func testEncodeMatchesFoundationAndRoundTrips() throws {
        for key in [TestKeys.client, TestKeys.clientPublic, [UInt8](repeating: 0xFF, count: 32)] {
            let text = KeyText.encode(key)
            XCTAssertEqual(text, TestKeys.text(key))
            XCTAssertEqual(text.count, 44)
            XCTAssertEqual(try KeyText.decode(text, source: "test"), key)
        }
    }

    func testEncodesOtherLengthsLikeFoundation() {
        for count in 0...7 {
            let bytes = [UInt8]((0..<count).map { UInt8(200 + $0) })
            XCTAssertEqual(KeyText.encode(bytes), Data(bytes).base64EncodedString(), "\(count) bytes")
        }
    }

    /// ASCII whitespace as `echo` or an editor leaves it, and Unicode's (a no-break space).
    func testDecodeToleratesSurroundingWhitespace() throws {
        for (before, after) in [("  ", "\r\n\n"), ("\u{00A0}\u{2003}", "\u{3000}\n")] {
            XCTAssertEqual(try KeyText.decode(before + TestKeys.text(TestKeys.relay) + after, source: "test"), TestKeys.relay)
        }
    }

    /// The client key's text with the character at `offset` replaced.
    func clientKeyText(replacing offset: Int, with character: String) -> String {
        var text = TestKeys.text(TestKeys.client)
        text.replaceSubrange(text.index(text.startIndex, offsetBy: offset)...text.index(text.startIndex, offsetBy: offset), with: character)
        return text
    }

    func testNotBase64NamesTheCharacterAndSource() {
        let text = clientKeyText(replacing: 5, with: "!")
        let error = assertConfigError({ () throws(ConfigError) in try KeyText.decode(text, source: "--relay-public-key") },
                                      contains: ["--relay-public-key", "not base64", "'!'", "position 6"])
        guard case .invalidKey(_, .notBase64) = error else { return XCTFail("wrong case \(String(describing: error))") }
    }

    func testInnerSpaceIsNotBase64() {
        let text = TestKeys.text(TestKeys.client)
        let broken = String(text.prefix(20)) + " " + String(text.dropFirst(21))
        assertConfigError({ () throws(ConfigError) in try KeyText.decode(broken, source: "k") }, contains: ["not base64", "a space"])
    }

    func testWrongLengthTextIsNotBase64() {
        assertConfigError({ () throws(ConfigError) in try KeyText.decode("abcde", source: "k") },
                          contains: ["not base64", "5 characters", "multiple of 4"])
    }

    func testThirtyOneBytesSaysSo() {
        let text = Data([UInt8](repeating: 7, count: 31)).base64EncodedString()
        let error = assertConfigError({ () throws(ConfigError) in try KeyText.decode(text, source: "--allow-client") },
                                      contains: ["--allow-client", "decodes to 31 bytes, a key is 32"])
        XCTAssertEqual(error, .invalidKey(source: "--allow-client", problem: .wrongLength(31)))
    }

    func testThirtyThreeBytesSaysSo() {
        let text = Data([UInt8](repeating: 7, count: 33)).base64EncodedString()
        assertConfigError({ () throws(ConfigError) in try KeyText.decode(text, source: "k") }, contains: ["33 bytes"])
    }

    func testNonCanonicalLastCharacterIsRefused() {
        // A 32-byte key's last data character carries 2 unused bits; setting the lowest one gives text
        // that decodes to the same 32 bytes only if those bits are ignored.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var text = TestKeys.text(TestKeys.client)
        XCTAssertTrue(text.hasSuffix("="))
        let last = alphabet.firstIndex(of: text.dropLast().last!)!
        XCTAssertEqual(last & 0b11, 0)
        text = String(text.dropLast(2)) + String(alphabet[last | 1]) + "="
        assertConfigError({ () throws(ConfigError) in try KeyText.decode(text, source: "k") }, contains: ["stray bits"])
    }

    func testPaddingInTheMiddleIsRefused() {
        let text = "AAAA=AAA" + String(repeating: "A", count: 36)
        assertConfigError({ () throws(ConfigError) in try KeyText.decode(text, source: "k") }, contains: ["padding", "position 5"])
    }

    func testEmptyTextIsEmpty() {
        let error = assertConfigError({ () throws(ConfigError) in try KeyText.decode(" \n", source: "standard input") },
                                      contains: ["standard input is empty"])
        XCTAssertEqual(error, .invalidKey(source: "standard input", problem: .empty))
    }

    func testReadsKeyFileWithTrailingNewline() throws {
        let dir = try TempDirectory(self)
        let path = try dir.write("client.key", TestKeys.text(TestKeys.client) + "\n")
        XCTAssertEqual(try KeyText.read(file: path, what: "private key file"), TestKeys.client)
    }

    /// As ssh refuses an unprotected private key: any permission bit for group or others.
    func testKeyFileOthersMayAccessIsRefused() throws {
        let dir = try TempDirectory(self)
        for mode in [0o644, 0o640, 0o604, 0o620, 0o601, 0o660] {
            let path = try dir.write("k\(mode).key", TestKeys.text(TestKeys.client), mode: mode)
            let error = assertConfigError({ () throws(ConfigError) in try KeyText.read(file: path, what: "pre-shared key file") },
                                          contains: ["pre-shared key file \(path)", "mode 0\(String(mode, radix: 8))",
                                                     "chmod 600 \(path)"])
            XCTAssertEqual(error, .keyFileExposed(what: "pre-shared key file", path: path, permissions: UInt32(mode)))
        }
        for mode in [0o600, 0o400, 0o700] {
            let path = try dir.write("ok\(mode).key", TestKeys.text(TestKeys.client), mode: mode)
            XCTAssertEqual(try KeyText.read(file: path, what: "private key file"), TestKeys.client, "mode \(String(mode, radix: 8))")
        }
    }

    /// A pipe (`--psk <(pass show sluice/psk)`) has no owner-only mode to check: it is read as it is.
    func testPipeIsReadWhateverItsMode() throws {
        let dir = try TempDirectory(self)
        let path = dir.path + "/pipe.key"
        XCTAssertEqual(mkfifo(path, 0o644), 0)
        let text = TestKeys.text(TestKeys.client) + "\n"
        let writer = Thread {
            let fd = open(path, O_WRONLY)
            _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        writer.start()
        XCTAssertEqual(try KeyText.read(file: path, what: "pre-shared key file"), TestKeys.client)
    }

    /// The mode is checked before the contents: a readable file that is not even a key says so.
    func testExposureIsReportedBeforeContents() throws {
        let dir = try TempDirectory(self)
        let path = try dir.write("garbage.key", "not a key", mode: 0o644)
        assertConfigError({ () throws(ConfigError) in try KeyText.read(file: path, what: "private key file") },
                          contains: ["accessible by other users", "chmod 600"])
    }

    func testNonASCIICharacterIsNamedAtItsPosition() {
        assertConfigError({ () throws(ConfigError) in try KeyText.decode(clientKeyText(replacing: 3, with: "é"), source: "k") },
                          contains: ["U+E9 at position 4 is not a base64 character"])
    }

    func testMissingKeyFileNamesFileAndReason() {
        let error = assertConfigError({ () throws(ConfigError) in try KeyText.read(file: "no-such-dir/client.key", what: "private key file") },
                                      contains: ["private key file no-such-dir/client.key: No such file or directory"])
        XCTAssertEqual(error, .keyFileUnreadable(what: "private key file", path: "no-such-dir/client.key", reason: "No such file or directory"))
    }

    func testDirectoryAsKeyFileNamesReason() throws {
        let dir = try TempDirectory(self)
        assertConfigError({ () throws(ConfigError) in try KeyText.read(file: dir.path, what: "pre-shared key file") },
                          contains: ["pre-shared key file \(dir.path)", "Is a directory"])
    }

    func testEmptyKeyFileNamesFile() throws {
        let dir = try TempDirectory(self)
        let path = try dir.write("empty.key", "")
        assertConfigError({ () throws(ConfigError) in try KeyText.read(file: path, what: "private key file") },
                          contains: ["private key file \(path) is empty"])
    }

    func testShortKeyFileNamesFileAndLength() throws {
        let dir = try TempDirectory(self)
        let path = try dir.write("short.key", Data([UInt8](repeating: 1, count: 31)).base64EncodedString() + "\n")
        assertConfigError({ () throws(ConfigError) in try KeyText.read(file: path, what: "private key file") },
                          contains: ["private key file \(path)", "31 bytes"])
    }

    func testHugeFileIsRefusedWithoutDecoding() throws {
        let dir = try TempDirectory(self)
        let path = try dir.write("big.key", String(repeating: "A", count: 10_000))
        assertConfigError({ () throws(ConfigError) in try KeyText.read(file: path, what: "private key file") },
                          contains: [path, "larger than 4096 bytes"])
    }
}
