import Foundation
import Glibc
import SluiceWire
import XCTest

@testable import SluiceHost

/// `--route-all` on a real (namespaced) kernel: rules with suppress_prefixlength and a destination,
/// throw routes, the nftables table through libnftables, the route lookup, and the crash record.
final class RouteAllHostTests: NamespacedTestCase {
    private func nft(_ args: String...) throws -> String {
        guard let path = ["/usr/sbin/nft", "/sbin/nft"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("nft is not installed")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = args
        let out = Pipe()
        process.standardOutput = out
        process.standardError = Pipe()
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    private func plan(_ tun: String) -> [HostChange] {
        [.firewall(FirewallRuleset(tun: tun, relays: [SocketEndpoint("10.30.0.2:7000")!], fwmark: 0x534c, killSwitch: true, blockIPv6: false))]
            + HostRouting.tunnelPlan(
                interface: tun, addresses: [IPPrefix("198.18.0.1/30")!, IPPrefix("fd53::1/126")!], routes: [],
                excludes: [IPPrefix("192.0.2.0/24")!, IPPrefix("2001:db8::/32")!],
                routeAll: .init(resolvers: [IPAddress("9.9.9.9")!, IPAddress("2620:fe::fe")!]))
    }

    func testInstallAndUndo() throws {
        let rulesBefore = (try IPTool.json("-4", "rule", "show").count, try IPTool.json("-6", "rule", "show").count)
        let tun = try TunDevice(name: "slra0")
        let routing = try HostRouting(installing: plan(tun.name))
        addTeardownBlock { routing.undo() }

        let rules4 = try IPTool.json("-4", "rule", "show")
        XCTAssertTrue(rules4.contains { $0["priority"] as? Int == 21323 && $0["suppress_prefixlen"] as? Int == 0 && $0["table"] as? String == "main" }, "\(rules4)")
        XCTAssertTrue(rules4.contains { $0["priority"] as? Int == 21322 && $0["dst"] as? String == "9.9.9.9" }, "\(rules4)")
        XCTAssertTrue(try IPTool.json("-6", "rule", "show").contains { $0["priority"] as? Int == 21322 && $0["dst"] as? String == "2620:fe::fe" })
        let table = try IPTool.json("-4", "route", "show", "table", "21324")
        XCTAssertTrue(table.contains { $0["type"] as? String == "throw" && $0["dst"] as? String == "192.0.2.0/24" }, "\(table)")
        XCTAssertTrue(table.contains { $0["dst"] as? String == "default" && $0["dev"] as? String == "slra0" }, "\(table)")
        XCTAssertTrue(try IPTool.json("-6", "route", "show", "table", "21324").contains { $0["type"] as? String == "throw" })
        XCTAssertTrue(try nft("list", "tables").contains("table inet sluice"))
        // What the kernel now does: the carriers (marked) keep the main table; others enter the TUN.
        let netlink = try NetlinkSocket()
        XCTAssertEqual(try netlink.lookupRoute(to: IPAddress("203.0.113.9")!).interface, "slra0")
        XCTAssertThrowsError(try netlink.lookupRoute(to: IPAddress("203.0.113.9")!, mark: 0x534c), "no main route in this namespace")

        XCTAssertEqual(routing.undo(), [])
        XCTAssertEqual((try IPTool.json("-4", "rule", "show").count, try IPTool.json("-6", "rule", "show").count).0, rulesBefore.0)
        XCTAssertEqual(try IPTool.json("-6", "rule", "show").count, rulesBefore.1)
        XCTAssertEqual(try IPTool.json("-4", "route", "show", "table", "21324").count, 0)
        XCTAssertFalse(try nft("list", "tables").contains("table inet sluice"))
    }

    func testAnExistingTableIsNeitherTakenOverNorRemoved() throws {
        _ = try nft("add", "table", "inet", "sluice")
        addTeardownBlock { _ = try? self.nft("delete", "table", "inet", "sluice") }
        let tun = try TunDevice(name: "slra1")
        XCTAssertThrowsError(try HostRouting(installing: plan(tun.name))) { error in
            XCTAssertTrue("\(error)".contains("nftables") && "\(error)".contains("exists"), "\(error)")
        }
        XCTAssertTrue(try nft("list", "tables").contains("table inet sluice"), "someone else's table stays")
        XCTAssertFalse(try IPTool.json("-4", "rule", "show").contains { $0["priority"] as? Int == 21324 }, "nothing else was installed")
    }

    func testLeftoversOfADeadOwnerAreUndoneFromTheRecord() throws {
        var template = Array((NSTemporaryDirectory() + "/sluice-leftovers-XXXXXX").utf8CString)
        let directory = String(cString: mkdtemp(&template)!)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        let path = HostState.path(for: "slra2", directory: directory)
        var state = HostState.forThisProcess(tun: "slra2")
        let tun = try TunDevice(name: "slra2")
        // A bystander rule at Sluice's own priority but another table must survive.
        try IPTool.run("rule", "add", "pref", "21324", "lookup", "100")
        addTeardownBlock { _ = try? IPTool.run("rule", "del", "pref", "21324", "lookup", "100") }
        _ = try HostRouting(installing: plan(tun.name)) { steps in
            state.steps = steps
            try? state.save(to: path)
        }
        // The "crash": no undo, and the record's owner is gone.
        var dead = try XCTUnwrap(HostState.load(path: path))
        XCTAssertEqual(dead.steps.count, plan(tun.name).count, "every step is on record")
        dead.pid = Int32.max - 1
        try dead.save(to: path)
        XCTAssertTrue(try nft("list", "tables").contains("table inet sluice"))

        XCTAssertEqual(try HostState.undoLeftovers(at: path), [])
        XCTAssertNil(try HostState.load(path: path))
        XCTAssertFalse(try nft("list", "tables").contains("table inet sluice"))
        let rules = try IPTool.rules("-4")
        XCTAssertTrue(rules.contains("21324: lookup 100"), "\(rules)")
        XCTAssertFalse(rules.contains { $0.hasPrefix("21321") || $0.hasPrefix("21322") || $0.hasPrefix("21323") }, "\(rules)")
        XCTAssertEqual(try IPTool.json("-6", "route", "show", "table", "21324").count, 0)
    }
}
