import Glibc
import SluiceWire
import XCTest

@testable import SluiceHost

/// The install/undo transaction `sluice up` uses, inside the test namespace.
final class HostRoutingTests: NamespacedTestCase {
    private let table = HostRouting.defaultTable

    private func plan(_ interface: String, routes: [String]) -> [HostChange] {
        HostRouting.tunnelPlan(
            interface: interface, mtu: 1400, txQueueLength: 10_000, addresses: [IPPrefix("10.20.0.1/24")!, IPPrefix("fd20::1/64")!],
            routes: routes.map { IPPrefix($0)! })
    }

    /// Things that exist before Sluice starts and must survive its undo: a route in the same table
    /// through another device, and an unrelated rule.
    private func addBystanders() throws {
        try IPTool.run("link", "set", "lo", "up")
        try IPTool.run("route", "add", "10.77.0.0/24", "dev", "lo", "table", String(table))
        try IPTool.run("rule", "add", "pref", "100", "lookup", "100")
        addTeardownBlock {
            _ = try? IPTool.run("route", "del", "10.77.0.0/24", "dev", "lo", "table", "21324")
            _ = try? IPTool.run("rule", "del", "pref", "100")
        }
    }

    private func assertBystandersIntact(file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try IPTool.routes("-4", table: table), ["10.77.0.0/24 dev lo"], file: file, line: line)
        XCTAssertEqual(try IPTool.rules("-4"), ["0: lookup local", "100: lookup 100", "32766: lookup main", "32767: lookup default"], file: file, line: line)
        XCTAssertEqual(try IPTool.rules("-6"), ["0: lookup local", "32766: lookup main"], file: file, line: line)
    }

    func testInstallThenUndoRemovesExactlyWhatItAdded() throws {
        try addBystanders()
        let tun = try TunDevice(name: "slhr0")
        let changes = plan(tun.name, routes: ["10.20.0.0/24", "10.30.0.0/16", "fd20::/64", "fd30::/48"])
        let routing = try HostRouting(installing: changes)
        addTeardownBlock { routing.undo() }
        XCTAssertEqual(routing.installed.map(\.description), changes.map(\.description))

        let link = try IPTool.json("link", "show", "dev", tun.name).first
        XCTAssertEqual(link?["mtu"] as? Int, 1400)
        XCTAssertEqual(link?["txqlen"] as? Int, 10_000)
        XCTAssertTrue((link?["flags"] as? [String])?.contains("UP") ?? false)
        XCTAssertEqual(Set(try IPTool.addresses(tun.name).map(\.text)), ["10.20.0.1/24", "fd20::1/64"])
        XCTAssertEqual(Set(try IPTool.routes("-4", table: table)), ["10.77.0.0/24 dev lo", "10.20.0.0/24 dev slhr0", "10.30.0.0/16 dev slhr0"])
        XCTAssertEqual(Set(try IPTool.routes("-6", table: table)), ["fd20::/64 dev slhr0", "fd30::/48 dev slhr0"])
        XCTAssertTrue(try IPTool.rules("-4").contains("21324: not fwmark 0x534c lookup 21324"))
        XCTAssertTrue(try IPTool.rules("-6").contains("21324: not fwmark 0x534c lookup 21324"))

        XCTAssertEqual(routing.undo(), [])
        XCTAssertEqual(routing.installed, [])
        let after = try IPTool.json("link", "show", "dev", tun.name).first
        XCTAssertEqual(after?["mtu"] as? Int, 1500, "MTU restored")
        XCTAssertEqual(after?["txqlen"] as? Int, 500, "queue length restored")
        XCTAssertFalse((after?["flags"] as? [String])?.contains("UP") ?? true, "link down again")
        XCTAssertEqual(try IPTool.addresses(tun.name).map(\.text), [])
        XCTAssertEqual(try IPTool.routes("-6", table: table), [])
        try assertBystandersIntact()
        XCTAssertEqual(routing.undo(), [], "a second undo has nothing left to do")
    }

    /// --dns: port-53 traffic to any address goes into the TUN; marked carrier sockets to main.
    func testDNSCapturePlanInstallsPortRulesAndUndoesThem() throws {
        try addBystanders()
        let tun = try TunDevice(name: "slhr3")
        let changes = plan(tun.name, routes: ["10.20.0.0/24"]) + HostRouting.dnsCapturePlan(interface: tun.name, dnsTable: table + 1)
        let routing = try HostRouting(installing: changes)
        addTeardownBlock { routing.undo() }
        for family in ["-4", "-6"] {
            let rules = try IPTool.rules(family)
            XCTAssertTrue(rules.contains("21321: fwmark 0x534c lookup main"), "\(family): \(rules)")
            XCTAssertTrue(rules.contains("21322: ipproto udp dport 53 lookup 21325"), "\(family): \(rules)")
            XCTAssertTrue(rules.contains("21323: ipproto tcp dport 53 lookup 21325"), "\(family): \(rules)")
        }
        XCTAssertEqual(try IPTool.routes("-4", table: table + 1), ["default dev slhr3"])
        XCTAssertEqual(try IPTool.routes("-6", table: table + 1), ["default dev slhr3"])
        // The kernel really routes by them: DNS to an address outside the routes goes to the TUN.
        let viaTun = try IPTool.run("route", "get", "192.0.2.53", "ipproto", "udp", "dport", "53")
        XCTAssertTrue(viaTun.contains("dev slhr3"), viaTun)

        XCTAssertEqual(routing.undo(), [])
        XCTAssertEqual(try IPTool.routes("-4", table: table + 1), [])
        try assertBystandersIntact()
    }

    func testFailingStepRollsBackEverythingBefore() throws {
        try addBystanders()
        let tun = try TunDevice(name: "slhr1")
        // 10.77.0.0/24 is already in the table (through lo), so adding it through the TUN fails
        // after the MTU, link, addresses, two routes and nothing else were installed.
        let changes = plan(tun.name, routes: ["10.20.0.0/24", "fd20::/64", "10.77.0.0/24"])
        XCTAssertThrowsError(try HostRouting(installing: changes)) { error in
            XCTAssertEqual(error as? HostError, .netlinkRequest(operation: "add route 10.77.0.0/24 dev slhr1 table 21324", errno: EEXIST, kernelMessage: nil))
            XCTAssertEqual("\(error)", "add route 10.77.0.0/24 dev slhr1 table 21324: File exists (EEXIST)")
        }
        let link = try IPTool.json("link", "show", "dev", tun.name).first
        XCTAssertEqual(link?["mtu"] as? Int, 1500)
        XCTAssertFalse((link?["flags"] as? [String])?.contains("UP") ?? true)
        XCTAssertEqual(try IPTool.addresses(tun.name).map(\.text), [])
        XCTAssertEqual(try IPTool.routes("-6", table: table), [])
        try assertBystandersIntact()
    }

    func testFailingRuleRollsBackRoutesAndAddresses() throws {
        try addBystanders()
        let tun = try TunDevice(name: "slhr2")
        // Someone else's rule at Sluice's priority, table and mark: the IPv6 rule step fails last.
        try IPTool.run("-6", "rule", "add", "fwmark", "0x534c", "lookup", "21324", "pref", "21324")
        addTeardownBlock { _ = try? IPTool.run("-6", "rule", "del", "pref", "21324") }
        let changes = plan(tun.name, routes: ["10.20.0.0/24", "fd20::/64"])
        XCTAssertThrowsError(try HostRouting(installing: changes)) { error in
            XCTAssertEqual("\(error)", "add IPv6 rule 21324: not fwmark 0x534c lookup 21324: File exists (EEXIST)")
        }
        XCTAssertFalse(try IPTool.rules("-4").contains { $0.hasPrefix("21324:") }, "the IPv4 rule installed before was removed")
        XCTAssertTrue(try IPTool.rules("-6").contains("21324: fwmark 0x534c lookup 21324"), "the other rule stays")
        XCTAssertEqual(try IPTool.routes("-6", table: table), [])
        XCTAssertEqual(try IPTool.addresses(tun.name).map(\.text), [])
        XCTAssertEqual(try IPTool.routes("-4", table: table), ["10.77.0.0/24 dev lo"])
    }

    func testUndoLeavesStateItFound() throws {
        let tun = try TunDevice(name: "slhr3")
        let netlink = try NetlinkSocket()
        try netlink.setLink(tun.name, up: true)
        try netlink.setMTU(1400, of: tun.name)
        let routing = try HostRouting(installing: plan(tun.name, routes: ["10.20.0.0/24"]), netlink: netlink)
        XCTAssertFalse(routing.installed.contains(.linkUp(interface: tun.name)), "it was up already")
        XCTAssertFalse(routing.installed.contains { if case .mtu = $0 { true } else { false } }, "it had that MTU already")
        XCTAssertEqual(routing.undo(), [])
        let info = try netlink.link(named: tun.name)
        XCTAssertTrue(info.isUp, "still up: undo never reverts what it did not do")
        XCTAssertEqual(info.mtu, 1400)
    }

    func testUndoAfterTunVanishedStillRemovesRules() throws {
        var tun: TunDevice? = try TunDevice(name: "slhr4")
        let routing = try HostRouting(installing: plan("slhr4", routes: ["10.20.0.0/24", "fd20::/64"]))
        addTeardownBlock { routing.undo() }
        tun = nil  // the interface goes, and its addresses and routes with it
        XCTAssertNil(tun)
        XCTAssertEqual(routing.undo(), [], "gone objects count as undone")
        XCTAssertFalse(try IPTool.rules("-4").contains { $0.hasPrefix("21324:") })
        XCTAssertFalse(try IPTool.rules("-6").contains { $0.hasPrefix("21324:") })
    }
}
