import Foundation
import Glibc
import SluiceWire
import XCTest

@testable import SluiceHost

/// The state file: encoding, decoding, ownership. No privileges needed.
final class HostStateTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        var template = Array((NSTemporaryDirectory() + "/sluice-state-XXXXXX").utf8CString)
        directory = String(cString: mkdtemp(&template)!)
        let directory = directory!
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
    }

    static let everyStep: [HostStep] = [
        .mtu(interface: "sluice0", previous: 1500, new: 1400),
        .linkUp(interface: "sluice0"),
        .address(InterfaceAddress(IPPrefix("198.18.0.1/30")!, on: "sluice0")),
        .route(Route(IPPrefix("0.0.0.0/0")!, dev: "sluice0", table: 21324)),
        .route(Route(throw: IPPrefix("2001:db8::/32")!, table: 21324, metric: 5)),
        .rule(PolicyRule(family: .ipv4, priority: 21324, table: 21324, fwmark: 0x534c, invert: true)),
        .rule(PolicyRule(family: .ipv6, priority: 21322, table: 21324, destination: IPPrefix("fd20::2/128")!)),
        .rule(PolicyRule(family: .ipv4, priority: 21323, table: 254, suppressPrefixLength: 0)),
        .rule(PolicyRule(family: .ipv4, priority: 1, table: 2, fwmark: 3, fwmask: 0xff)),
        .firewall(table: "inet sluice"),
        .resolver(ResolverBackup(path: "/etc/resolv.conf", backupPath: "/run/sluice/sluice0.resolv.conf", original: .file, written: "nameserver 9.9.9.9\n")),
        .resolver(ResolverBackup(path: "/etc/resolv.conf", backupPath: "", original: .symlink(target: "../run/systemd/resolve/stub-resolv.conf"), written: "x")),
        .resolver(ResolverBackup(path: "/etc/resolv.conf", backupPath: "", original: .absent, written: "")),
        .resolvedLink(interface: "sluice0", index: 7),
    ]

    func testRoundTripOfEveryStep() throws {
        let state = HostState(tun: "sluice0", pid: 42, processStart: 7, netNamespace: 1, mountNamespace: 2, steps: Self.everyStep)
        let decoded = try HostState.decode(state.encoded(), path: "x")
        XCTAssertEqual(decoded, state)
        let text = String(decoding: state.encoded(), as: UTF8.self)
        XCTAssertTrue(text.contains("\"destination\" : \"2001:db8::\\/32\"") || text.contains("\"destination\" : \"2001:db8::/32\""), text)
    }

    /// Records written by the Foundation-based Sluice (JSONEncoder, pretty, sorted keys) read back the
    /// same, and what Sluice writes now is the same JSON.
    func testSameJSONAsFoundationsEncoder() throws {
        let steps = Self.everyStep + [.cgroupTree(path: "sluice/slst0", root: "/sys/fs/cgroup")]
        let state = HostState(tun: "sluice0", pid: 42, processStart: .max, netNamespace: 4026531840, mountNamespace: 2, steps: steps)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let foundation = try encoder.encode(state)
        XCTAssertEqual(try HostState.decode(Array(foundation), path: "x"), state)
        let ours = try JSONSerialization.jsonObject(with: Data(state.encoded())) as? NSDictionary
        XCTAssertEqual(ours, try JSONSerialization.jsonObject(with: foundation) as? NSDictionary)
        XCTAssertEqual(try JSONDecoder().decode(HostState.self, from: Data(state.encoded())), state)
    }

    func testDecodeErrorNamesThePlace() {
        let text = #"{"version":1,"tun":"s","pid":1,"processStart":1,"netNamespace":1,"mountNamespace":1,"steps":[{"route":{"_0":{"destination":"10.0.0.0/8","kind":"device","interface":"s"}}}]}"#
        XCTAssertThrowsError(try HostState.decode(Array(text.utf8), path: "/run/sluice/s.json")) { error in
            XCTAssertTrue("\(error)".contains("not a Sluice state record (steps[0].route._0: key \"table\" is missing)"), "\(error)")
        }
        XCTAssertThrowsError(try HostState.decode(Array("{\"version\":1,}".utf8), path: "/run/sluice/s.json")) { error in
            XCTAssertTrue("\(error)".contains("not a Sluice state record (not JSON: expected a key in double quotes after ','"), "\(error)")
        }
    }

    func testRefusesWhatItDidNotWrite() {
        for (bytes, fragment) in [(Array("{}".utf8), "not a Sluice state record"), (Array("garbage".utf8), "not a Sluice state record"),
                                  (Array(#"{"version":9,"tun":"s","pid":1,"processStart":1,"netNamespace":1,"mountNamespace":1,"steps":[]}"#.utf8), "version 9")] {
            XCTAssertThrowsError(try HostState.decode(bytes, path: "/run/sluice/s.json")) { error in
                XCTAssertTrue("\(error)".contains(fragment) && "\(error)".contains("/run/sluice/s.json"), "\(error)")
            }
        }
    }

    func testSaveLoadRemove() throws {
        let path = HostState.path(for: "slst0", directory: directory + "/run")
        XCTAssertNil(try HostState.load(path: path))
        var state = HostState.forThisProcess(tun: "slst0")
        try state.save(to: path)
        state.steps = Self.everyStep
        try state.save(to: path)
        XCTAssertEqual(try HostState.load(path: path), state)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        HostState.remove(path: path)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/run"), "the empty directory goes too")
    }

    func testOwnership() {
        let mine = HostState.forThisProcess(tun: "s")
        XCTAssertTrue(mine.ownerIsAlive)
        XCTAssertNil(mine.foreignNamespace)
        var reused = mine
        reused.processStart += 1
        XCTAssertFalse(reused.ownerIsAlive, "same pid, other start time: a reused pid")
        var gone = mine
        gone.pid = Int32.max - 1
        XCTAssertFalse(gone.ownerIsAlive)
        var elsewhere = mine
        elsewhere.netNamespace += 1
        XCTAssertEqual(elsewhere.foreignNamespace, "network")
    }

    func testUndoLeftoversRefusesALiveOwnerAndAForeignNamespace() throws {
        let path = HostState.path(for: "slst1", directory: directory)
        let mine = HostState.forThisProcess(tun: "slst1")
        try mine.save(to: path)
        XCTAssertThrowsError(try HostState.undoLeftovers(at: path)) { error in
            XCTAssertTrue("\(error)".contains("is up already"), "\(error)")
        }
        var foreign = mine
        foreign.pid = Int32.max - 1
        foreign.mountNamespace += 1
        try foreign.save(to: path)
        XCTAssertThrowsError(try HostState.undoLeftovers(at: path)) { error in
            XCTAssertTrue("\(error)".contains("another mount namespace"), "\(error)")
        }
        XCTAssertNotNil(try HostState.load(path: path), "left alone")
    }

    /// The resolved step is kept as the interface and the index it had; the record reads like that.
    func testResolvedLinkStepRecord() throws {
        let state = HostState(tun: "sluice0", pid: 42, processStart: 7, netNamespace: 1, mountNamespace: 2,
                              steps: [.resolvedLink(interface: "sluice0", index: 7)])
        let text = String(decoding: state.encoded(), as: UTF8.self)
        let compact = text.filter { !$0.isWhitespace }
        XCTAssertTrue(compact.contains(#""steps":[{"resolvedLink":{"index":7,"interface":"sluice0"}}]"#), text)
        XCTAssertEqual(try HostState.decode(state.encoded(), path: "x"), state)
    }

    /// After a crash the TUN is gone, and resolved dropped the link with it: `sluice down` counts the
    /// step as undone without asking the bus (no bus is needed here), and removes the record.
    func testResolvedLinkOfAVanishedInterfaceCountsAsUndone() throws {
        let path = HostState.path(for: "slst2", directory: directory)
        var crashed = HostState.forThisProcess(tun: "slst2")
        crashed.pid = Int32.max - 1
        crashed.steps = [.resolvedLink(interface: "slst-gone0", index: 99_999)]
        try crashed.save(to: path)
        XCTAssertEqual(try HostState.undoLeftovers(at: path), [])
        XCTAssertNil(try HostState.load(path: path))
    }
}
