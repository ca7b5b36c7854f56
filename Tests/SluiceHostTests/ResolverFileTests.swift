import Foundation
import Glibc
import SluiceWire
import XCTest

@testable import SluiceHost

/// The resolver file swap, on files in a scratch directory (never /etc).
final class ResolverFileTests: XCTestCase {
    private var directory: String!
    private var path: String { directory + "/resolv.conf" }
    private var backup: String { directory + "/backup.conf" }
    private let original = "# original\nnameserver 192.168.1.1\nsearch lan\n"

    override func setUpWithError() throws {
        var template = Array((NSTemporaryDirectory() + "/sluice-resolv-XXXXXX").utf8CString)
        directory = String(cString: mkdtemp(&template)!)
        let directory = directory!
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
    }

    private var change: ResolverChange {
        ResolverChange(path: path, backupPath: backup, nameservers: [IPAddress("9.9.9.9")!, IPAddress("2620:fe::fe")!], owner: "test")
    }

    private func read(_ p: String) -> String? { try? String(contentsOfFile: p, encoding: .utf8) }

    private func inode(_ p: String) -> (ino: UInt, mode: UInt32) {
        var info = stat()
        XCTAssertEqual(lstat(p, &info), 0)
        return (UInt(info.st_ino), info.st_mode)
    }

    func testRegularFileIsRewrittenInPlaceAndRestoredExactly() throws {
        try original.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o640)
        let before = inode(path)
        let undo = try ResolverFile.install(change)
        XCTAssertEqual(undo.original, .file)
        XCTAssertEqual(read(path), change.content)
        XCTAssertEqual(read(backup), original)
        XCTAssertEqual(inode(path).ino, before.ino, "same inode: works on a bind mount")
        try ResolverFile.restore(undo)
        XCTAssertEqual(read(path), original)
        XCTAssertEqual(inode(path).ino, before.ino)
        XCTAssertEqual(inode(path).mode, before.mode)
        XCTAssertNil(read(backup), "the backup goes once restored")
    }

    func testSymlinkIsReplacedAndPutBack() throws {
        try original.write(toFile: directory + "/stub.conf", atomically: false, encoding: .utf8)
        XCTAssertEqual(symlink("stub.conf", path), 0)
        let undo = try ResolverFile.install(change)
        XCTAssertEqual(undo.original, .symlink(target: "stub.conf"))
        XCTAssertEqual(inode(path).mode & S_IFMT, S_IFREG)
        XCTAssertEqual(read(directory + "/stub.conf"), original, "the link's target is not written through")
        try ResolverFile.restore(undo)
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: path), "stub.conf")
    }

    func testAbsentFileIsCreatedAndRemoved() throws {
        let undo = try ResolverFile.install(change)
        XCTAssertEqual(undo.original, .absent)
        XCTAssertEqual(read(path), change.content)
        try ResolverFile.restore(undo)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
    }

    func testAFileChangedMeanwhileIsLeftAlone() throws {
        try original.write(toFile: path, atomically: false, encoding: .utf8)
        let undo = try ResolverFile.install(change)
        try "nameserver 10.0.0.1\n".write(toFile: path, atomically: false, encoding: .utf8)
        XCTAssertThrowsError(try ResolverFile.restore(undo)) { error in
            XCTAssertEqual(error as? HostError, .resolverChangedMeanwhile(path: path, backup: backup))
        }
        XCTAssertEqual(read(path), "nameserver 10.0.0.1\n")
        XCTAssertEqual(read(backup), original, "the original stays available")
    }
}
