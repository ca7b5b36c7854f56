import Foundation
import SluiceConfig
import XCTest

/// `sluice keygen --output FILE [--force]`: the parse, and the file `KeyFileWriter` leaves.
final class KeyFileWriterTests: XCTestCase {
    let key = [UInt8](0..<32)

    func write(_ path: String, replacing: Bool = false) throws {
        try key.withUnsafeBytes { try KeyFileWriter.write(key: $0, to: path, replacing: replacing) }
    }

    func mode(_ path: String) throws -> Int {
        try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    func testParsesOutputAndForce() throws {
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["keygen", "--output", "a.key"]),
                       .keygen(KeygenConfig(output: "a.key", replacing: false)))
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["keygen", "--output=a.key", "--force"]),
                       .keygen(KeygenConfig(output: "a.key", replacing: true)))
        assertConfigError({ () throws(ConfigError) in try CommandLineParser.parse(arguments: ["keygen", "--force"]) },
                          contains: ["--force only applies together with --output"])
        assertConfigError({ () throws(ConfigError) in try CommandLineParser.parse(arguments: ["keygen", "--output", ""]) },
                          contains: ["--output", "a file name"])
    }

    /// Mode 0600 whatever the umask (here one that would leave the file readable by all), the key's
    /// text and a newline, readable back by the key-file reader.
    func testWritesTheKeyWithMode0600() throws {
        let dir = try TempDirectory(self)
        let path = dir.path + "/new.key"
        let old = umask(0)
        defer { umask(old) }
        try write(path)
        XCTAssertEqual(try mode(path), 0o600)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), Data(key).base64EncodedString() + "\n")
        XCTAssertEqual(try KeyText.read(file: path, what: "private key file"), key)
    }

    func testRefusesToOverwrite() throws {
        let dir = try TempDirectory(self)
        let path = try dir.write("old.key", "precious\n", mode: 0o600)
        XCTAssertThrowsError(try write(path)) { error in
            XCTAssertEqual(error as? KeyFileWriter.Failure, .exists(path: path))
            XCTAssertTrue("\(error)".contains("\(path) already exists"))
            XCTAssertTrue("\(error)".contains("--force"))
        }
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "precious\n")
        // A symbolic link is an existing name too: it is not followed to a file elsewhere.
        let link = dir.path + "/link.key"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: dir.path + "/elsewhere.key")
        XCTAssertThrowsError(try write(link)) { XCTAssertEqual($0 as? KeyFileWriter.Failure, .exists(path: link)) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.path + "/elsewhere.key"))
    }

    /// `--force` replaces the file by a new one: mode 0600 even when the old one was 0644, and no
    /// temporary file is left beside it.
    func testForceReplacesAtomically() throws {
        let dir = try TempDirectory(self)
        let path = try dir.write("old.key", "loose\n", mode: 0o644)
        try write(path, replacing: true)
        XCTAssertEqual(try mode(path), 0o600)
        XCTAssertEqual(try KeyText.read(file: path, what: "private key file"), key)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["old.key"])
    }

    func testUnwritableDirectoryNamesTheCall() throws {
        let dir = try TempDirectory(self)
        let path = dir.path + "/missing/new.key"
        XCTAssertThrowsError(try write(path)) { error in
            XCTAssertTrue("\(error)".contains("open(\(path)): No such file or directory (ENOENT)"), "\(error)")
        }
        XCTAssertThrowsError(try write(path, replacing: true)) { error in
            XCTAssertTrue("\(error)".contains("mkstemp(\(dir.path)/missing/.new.key."), "\(error)")
        }
    }
}
