import Glibc
import SluiceWire
import XCTest

@testable import SluiceHost

/// Addresses, routes, rules, links and socket marks over rtnetlink, checked with `ip -j`, inside
/// the test namespace.
final class NetlinkTests: NamespacedTestCase {
    private let table: UInt32 = 21324

    func testLinkStateAndMTU() throws {
        let tun = try TunDevice(name: "sllink0")
        let netlink = try NetlinkSocket()
        var info = try netlink.link(named: tun.name)
        XCTAssertEqual(info.name, "sllink0")
        XCTAssertEqual(info.index, try netlink.interfaceIndex(named: "sllink0"))
        XCTAssertFalse(info.isUp)
        XCTAssertEqual(info.mtu, 1500)

        try netlink.setMTU(1380, of: tun.name)
        try netlink.setLink(tun.name, up: true)
        info = try netlink.link(named: tun.name)
        XCTAssertTrue(info.isUp)
        XCTAssertEqual(info.mtu, 1380)
        XCTAssertEqual(try IPTool.json("link", "show", "dev", "sllink0").first?["mtu"] as? Int, 1380)
        XCTAssertTrue(try netlink.links().contains(info))

        try netlink.setLink(tun.name, up: false)
        XCTAssertFalse(try netlink.link(named: tun.name).isUp)

        XCTAssertThrowsError(try netlink.setMTU(10, of: tun.name)) { error in
            XCTAssertEqual((error as? HostError)?.errno, EINVAL)
            XCTAssertTrue("\(error)".hasPrefix("set mtu 10 on sllink0: Invalid argument (EINVAL)"), "\(error)")
        }
    }

    func testAddressesIPv4AndIPv6() throws {
        let tun = try TunDevice(name: "sladdr0")
        let netlink = try NetlinkSocket()
        try netlink.setLink(tun.name, up: true)
        let v4 = InterfaceAddress(IPPrefix("10.20.0.1/24")!, on: tun.name)
        let v6 = InterfaceAddress(IPPrefix("fd20::1/64")!, on: tun.name)
        try netlink.add(v4)
        try netlink.add(v6)

        let shown = try IPTool.addresses(tun.name)
        XCTAssertEqual(Set(shown.map(\.text)), ["10.20.0.1/24", "fd20::1/64"])
        let v6Info = try XCTUnwrap(shown.first { $0.text == "fd20::1/64" }?.info)
        XCTAssertEqual(v6Info["nodad"] as? Bool, true, "IPv6 address skips DAD")
        XCTAssertNil(v6Info["tentative"], "and is usable at once")
        let listed = try netlink.addresses(on: tun.name)
        XCTAssertEqual(Set(listed.filter { !IPPrefix("fe80::/10")!.contains($0.prefix.address) }), [v4, v6])
        XCTAssertTrue(listed.contains { IPPrefix("fe80::/10")!.contains($0.prefix.address) }, "the kernel's own link-local address is listed too")

        XCTAssertThrowsError(try netlink.add(v4)) { error in
            XCTAssertEqual((error as? HostError)?.errno, EEXIST)
            XCTAssertTrue("\(error)".hasPrefix("add address 10.20.0.1/24 dev sladdr0: File exists (EEXIST)"), "\(error)")
        }

        try netlink.delete(v4)
        try netlink.delete(v6)
        XCTAssertEqual(try IPTool.addresses(tun.name).map(\.text), [])
        XCTAssertThrowsError(try netlink.delete(v4)) { XCTAssertEqual(($0 as? HostError)?.errno, EADDRNOTAVAIL) }
    }

    func testRoutesInTableIPv4AndIPv6() throws {
        let tun = try TunDevice(name: "slroute0")
        let netlink = try NetlinkSocket()
        try netlink.setLink(tun.name, up: true)
        let routes = [
            Route(IPPrefix("10.20.0.0/24")!, dev: tun.name, table: table),
            Route(IPPrefix("10.30.1.2/16")!, dev: tun.name, table: table, metric: 7),  // host bits are cleared
            Route(IPPrefix("0.0.0.0/0")!, dev: tun.name, table: table),
            Route(IPPrefix("fd20::/64")!, dev: tun.name, table: table),
            Route(IPPrefix("::/0")!, dev: tun.name, table: table, metric: 9),
        ]
        addTeardownBlock { for route in routes { try? netlink.delete(route) } }
        for route in routes { try netlink.add(route) }
        XCTAssertEqual(routes[1].description, "10.30.0.0/16 dev slroute0 table 21324 metric 7")

        XCTAssertEqual(Set(try IPTool.routes("-4", table: table)), ["10.20.0.0/24 dev slroute0", "10.30.0.0/16 dev slroute0", "default dev slroute0"])
        XCTAssertEqual(Set(try IPTool.routes("-6", table: table)), ["fd20::/64 dev slroute0", "default dev slroute0"])
        let listed = try netlink.routes(inTable: table)
        XCTAssertEqual(listed.count, 5)
        XCTAssertTrue(listed.contains(Route(IPPrefix("10.30.0.0/16")!, dev: tun.name, table: table, metric: 7)))
        XCTAssertTrue(listed.contains(Route(IPPrefix("::/0")!, dev: tun.name, table: table, metric: 9)))
        XCTAssertEqual(try IPTool.routes("-4", table: 254), [], "nothing went into main")

        XCTAssertThrowsError(try netlink.add(routes[0])) { error in
            XCTAssertEqual(error as? HostError, .netlinkRequest(operation: "add route 10.20.0.0/24 dev slroute0 table 21324", errno: EEXIST, kernelMessage: nil))
            XCTAssertEqual("\(error)", "add route 10.20.0.0/24 dev slroute0 table 21324: File exists (EEXIST)")
        }

        for route in routes { try netlink.delete(route) }
        XCTAssertEqual(try IPTool.routes("-4", table: table), [])
        XCTAssertEqual(try IPTool.routes("-6", table: table), [])
        XCTAssertThrowsError(try netlink.delete(routes[0])) { XCTAssertEqual(($0 as? HostError)?.errno, ESRCH) }
    }

    /// A delete names metric and protocol, so a look-alike route someone else added through the
    /// same interface (other metric, `ip route`'s protocol `boot`) survives it.
    func testRouteDeleteNeverRemovesLookAlike() throws {
        let tun = try TunDevice(name: "sllook0")
        let netlink = try NetlinkSocket()
        try netlink.setLink(tun.name, up: true)
        try IPTool.run("-4", "route", "add", "10.20.0.0/24", "dev", tun.name, "table", String(table), "metric", "100")
        try IPTool.run("-6", "route", "add", "fd20::/64", "dev", tun.name, "table", String(table), "metric", "100")
        let ours = [Route(IPPrefix("10.20.0.0/24")!, dev: tun.name, table: table), Route(IPPrefix("fd20::/64")!, dev: tun.name, table: table)]
        for route in ours { try netlink.add(route) }
        XCTAssertEqual(Set(try netlink.routes(inTable: table)), Set(ours + ours.map { var r = $0; r.metric = 100; return r }))

        for route in ours { try netlink.delete(route) }
        XCTAssertEqual(try IPTool.json("-4", "route", "show", "table", String(table)).map { $0["metric"] as? Int }, [100])
        XCTAssertEqual(try IPTool.json("-6", "route", "show", "table", String(table)).map { $0["metric"] as? Int }, [100])
        XCTAssertThrowsError(try netlink.delete(ours[0]), "metric 0 matches any metric on IPv4, but the protocol differs") {
            XCTAssertEqual(($0 as? HostError)?.errno, ESRCH)
        }
        XCTAssertThrowsError(try netlink.delete(ours[1])) { XCTAssertEqual(($0 as? HostError)?.errno, ESRCH) }
        XCTAssertEqual(try IPTool.routes("-4", table: table), ["10.20.0.0/24 dev sllook0"])
    }

    func testKernelExtendedAckTextIsReported() throws {
        let tun = try TunDevice(name: "sldown0")  // left down
        let netlink = try NetlinkSocket()
        XCTAssertThrowsError(try netlink.add(Route(IPPrefix("10.40.0.0/24")!, dev: tun.name, table: table))) { error in
            guard case .netlinkRequest(_, ENETDOWN, let kernelMessage)? = error as? HostError else { return XCTFail("\(error)") }
            XCTAssertNotNil(kernelMessage)
            XCTAssertEqual(
                "\(error)",
                "add route 10.40.0.0/24 dev sldown0 table 21324: Network is down (ENETDOWN) — the kernel says: \(kernelMessage ?? "")")
        }
    }

    func testInvertedFwmarkRules() throws {
        let netlink = try NetlinkSocket()
        let v4 = PolicyRule(family: .ipv4, priority: 21324, table: table, fwmark: 0x534c, invert: true)
        let v6 = PolicyRule(family: .ipv6, priority: 21324, table: table, fwmark: 0x534c, invert: true)
        let masked = PolicyRule(family: .ipv4, priority: 21000, table: 77, fwmark: 0x10, fwmask: 0xff)
        addTeardownBlock { for rule in [v4, v6, masked] { try? netlink.delete(rule) } }
        XCTAssertEqual(v4.description, "IPv4 rule 21324: not fwmark 0x534c lookup 21324")
        try netlink.add(v4)
        try netlink.add(v6)
        try netlink.add(masked)

        XCTAssertTrue(try IPTool.rules("-4").contains("21324: not fwmark 0x534c lookup 21324"))
        XCTAssertTrue(try IPTool.rules("-6").contains("21324: not fwmark 0x534c lookup 21324"))
        XCTAssertTrue(try IPTool.rules("-4").contains("21000: fwmark 0x10 lookup 77"))
        XCTAssertEqual(try IPTool.json("-4", "rule", "show", "pref", "21000").first?["fwmask"] as? String, "0xff")
        XCTAssertTrue(try netlink.rules(family: .ipv4).contains(v4))
        XCTAssertTrue(try netlink.rules(family: .ipv4).contains(masked))
        XCTAssertTrue(try netlink.rules(family: .ipv6).contains(v6))
        XCTAssertFalse(try netlink.rules(family: .ipv6).contains(masked))

        XCTAssertThrowsError(try netlink.add(v4)) { error in
            XCTAssertEqual("\(error)", "add IPv4 rule 21324: not fwmark 0x534c lookup 21324: File exists (EEXIST)")
        }

        try netlink.delete(v4)
        try netlink.delete(v6)
        try netlink.delete(masked)
        XCTAssertEqual(try IPTool.rules("-4"), ["0: lookup local", "32766: lookup main", "32767: lookup default"])
        XCTAssertEqual(try IPTool.rules("-6"), ["0: lookup local", "32766: lookup main"])
    }

    /// The kernel matches RTM_DELRULE without looking at FIB_RULE_INVERT, so deleting
    /// `not fwmark M` would remove someone's `fwmark M` at the same priority; `delete` refuses.
    func testDeletingInvertedRuleNeverRemovesLookAlike() throws {
        let netlink = try NetlinkSocket()
        try IPTool.run("-4", "rule", "add", "fwmark", "0x534c", "lookup", "21324", "pref", "21324")
        addTeardownBlock { _ = try? IPTool.run("-4", "rule", "del", "pref", "21324") }
        let ours = PolicyRule(family: .ipv4, priority: 21324, table: table, fwmark: 0x534c, invert: true)

        XCTAssertThrowsError(try netlink.add(ours)) { error in
            XCTAssertEqual((error as? HostError)?.errno, EEXIST, "the kernel also ignores the invert flag when checking for duplicates")
        }
        XCTAssertThrowsError(try netlink.delete(ours)) { error in
            XCTAssertEqual((error as? HostError)?.errno, ENOENT)
        }
        XCTAssertTrue(try IPTool.rules("-4").contains("21324: fwmark 0x534c lookup 21324"), "the look-alike stays")
    }

    func testRoutingDecisionHonoursMark() throws {
        let tun = try TunDevice(name: "slmark0")
        let netlink = try NetlinkSocket()
        try netlink.setLink(tun.name, up: true)
        let route = Route(IPPrefix("10.50.0.0/24")!, dev: tun.name, table: table)
        let rule = PolicyRule(family: .ipv4, priority: 21324, table: table, fwmark: 0x534c, invert: true)
        addTeardownBlock { try? netlink.delete(rule) }
        try netlink.add(route)
        try netlink.add(rule)

        XCTAssertEqual(try IPTool.json("route", "get", "10.50.0.9").first?["dev"] as? String, "slmark0", "unmarked traffic enters the tunnel")
        XCTAssertThrowsError(try IPTool.run("route", "get", "10.50.0.9", "mark", "0x534c"), "marked traffic uses main, which is empty here") { error in
            XCTAssertTrue("\(error)".contains("Network is unreachable"), "\(error)")
        }
    }

    func testCleanupHelpersRemoveOnlyTheirTable() throws {
        let tun = try TunDevice(name: "slclean0")
        let netlink = try NetlinkSocket()
        try netlink.setLink(tun.name, up: true)
        try netlink.add(Route(IPPrefix("10.60.0.0/24")!, dev: tun.name, table: table))
        try netlink.add(Route(IPPrefix("fd60::/64")!, dev: tun.name, table: table))
        try netlink.add(Route(IPPrefix("10.61.0.0/24")!, dev: tun.name, table: 99))
        try netlink.add(PolicyRule(family: .ipv4, priority: 21324, table: table, fwmark: 0x534c, invert: true))
        try netlink.add(PolicyRule(family: .ipv4, priority: 99, table: 99))
        addTeardownBlock { _ = try? IPTool.run("-4", "rule", "del", "pref", "99") }

        XCTAssertEqual(try netlink.deleteRoutes(inTable: table), 2)
        XCTAssertEqual(try netlink.deleteRules(lookingUp: table, family: .ipv4), 1)
        XCTAssertEqual(try netlink.deleteRules(lookingUp: table, family: .ipv6), 0)
        XCTAssertEqual(try netlink.routes(inTable: table), [])
        XCTAssertEqual(try IPTool.routes("-4", table: 99), ["10.61.0.0/24 dev slclean0"])
        XCTAssertTrue(try IPTool.rules("-4").contains("99: lookup 99"))
        XCTAssertFalse(try IPTool.rules("-4").contains { $0.hasPrefix("21324:") })
    }

    func testSocketMark() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(try SocketMark.get(from: fd), 0)
        try SocketMark.set(HostRouting.defaultFwmark, on: fd)
        XCTAssertEqual(try SocketMark.get(from: fd), 0x534c)

        XCTAssertThrowsError(try SocketMark.set(1, on: -1)) { error in
            XCTAssertEqual("\(error)", "setsockopt(SO_MARK=0x1) on fd -1: Bad file descriptor (EBADF)")
        }
    }
}
