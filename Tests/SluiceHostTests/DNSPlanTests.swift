import SluiceWire
import XCTest

@testable import SluiceHost

/// Which host changes each DNS backend and mode makes (HostSetup+DNS.swift): pure, no privileges.
final class DNSPlanTests: XCTestCase {
    private func settings(routeAll: Bool, domains: [String] = []) -> HostConfiguration {
        var settings = HostConfiguration(tun: "sluice0", addresses: [IPPrefix("198.18.0.1/30")!], routes: [IPPrefix("10.20.0.0/24")!],
                                         fwmark: 0x534c, table: 21324)
        settings.routeAll = routeAll
        settings.dnsDomains = domains.map { DNSName($0)! }
        return settings
    }

    private func plan(_ backend: HostSetup.DNSBackend, routeAll: Bool, domains: [String] = []) throws -> (capture: [String], resolver: [String]) {
        let plan = HostSetup.dnsPlan(settings: settings(routeAll: routeAll, domains: domains), resolvers: [IPAddress("10.20.0.2")!],
                                     interface: "sluice0", backend: backend)
        return (plan.capture.map(\.description), plan.resolver.map(\.description))
    }

    private let fullCapture4 = [
        "add route 0.0.0.0/0 dev sluice0 table 21325",
        "add IPv4 rule 21321: fwmark 0x534c lookup main",
        "add IPv4 rule 21322: ipproto udp dport 53 lookup 21325",
        "add IPv4 rule 21323: ipproto tcp dport 53 lookup 21325",
    ]

    func testResolvedTakesTheLinkAndLeavesTheFileAlone() throws {
        let all = try plan(.resolved, routeAll: true)
        XCTAssertEqual(all.capture, [])
        XCTAssertEqual(all.resolver, ["point systemd-resolved's link sluice0 at 10.20.0.2 for ~. (default route)"])
        let routes = try plan(.resolved, routeAll: false)
        XCTAssertEqual(Array(routes.capture.prefix(4)), fullCapture4, "programs that ignore resolved still follow --dns")
        let split = try plan(.resolved, routeAll: false, domains: ["corp.test"])
        XCTAssertEqual(split.capture, [], "resolved picks the names; nothing is captured")
        XCTAssertEqual(split.resolver, ["point systemd-resolved's link sluice0 at 10.20.0.2 for ~corp.test"])
    }

    func testFile() throws {
        let all = try plan(.file, routeAll: true)
        XCTAssertEqual(all.capture, [])
        XCTAssertEqual(all.resolver, ["point /etc/resolv.conf at 10.20.0.2"])
        let routes = try plan(.file, routeAll: false)
        XCTAssertEqual(Array(routes.capture.prefix(4)), fullCapture4)
        XCTAssertEqual(routes.resolver, [])
    }

    func testFileSplitCapturesUDPOnlyAndKeepsTheFile() throws {
        let routes = try plan(.file, routeAll: false, domains: ["corp.test"])
        XCTAssertEqual(Array(routes.capture.prefix(3)), Array(fullCapture4.prefix(3)))
        XCTAssertFalse(routes.capture.contains { $0.contains("ipproto tcp") }, "\(routes.capture)")
        XCTAssertEqual(routes.resolver, [])
        let all = try plan(.file, routeAll: true, domains: ["corp.test"])
        XCTAssertEqual(all.capture, [
            "add route 0.0.0.0/0 dev sluice0 table 21325", "add IPv4 rule 21322: ipproto udp dport 53 lookup 21325",
            "add route ::/0 dev sluice0 table 21325", "add IPv6 rule 21322: ipproto udp dport 53 lookup 21325",
        ], "route-all has the fwmark rule already")
        XCTAssertEqual(all.resolver, [])
    }

    func testNoDNSNoPlan() throws {
        let plan = try plan(.none, routeAll: false)
        XCTAssertEqual(plan.capture + plan.resolver, [])
    }
}
