import SluiceWire
import XCTest

@testable import SluiceHost

/// The `--route-all` plan and the firewall text: pure values, no privileges needed.
final class RouteAllPlanTests: XCTestCase {
    private func prefix(_ text: String) -> IPPrefix { IPPrefix(text)! }

    func testRouteAllPlanFollowsWgQuick() {
        let changes = HostRouting.tunnelPlan(
            interface: "sluice0", addresses: [prefix("198.18.0.1/30"), prefix("fd53::1/126")], routes: [],
            excludes: [prefix("192.0.2.0/24"), prefix("2001:db8::/32")],
            routeAll: .init(resolvers: [IPAddress("9.9.9.9")!, IPAddress("2620:fe::fe")!]))
        XCTAssertEqual(changes.map(\.description), [
            "set link sluice0 up",
            "add address 198.18.0.1/30 dev sluice0",
            "add address fd53::1/126 dev sluice0",
            "add route 0.0.0.0/0 dev sluice0 table 21324",
            "add route ::/0 dev sluice0 table 21324",
            "add route throw 192.0.2.0/24 table 21324",
            "add route throw 2001:db8::/32 table 21324",
            "add IPv4 rule 21321: fwmark 0x534c lookup main",
            "add IPv4 rule 21322: to 9.9.9.9/32 lookup 21324",
            "add IPv4 rule 21323: from all lookup main suppress_prefixlength 0",
            "add IPv4 rule 21324: not fwmark 0x534c lookup 21324",
            "add IPv6 rule 21321: fwmark 0x534c lookup main",
            "add IPv6 rule 21322: to 2620:fe::fe/128 lookup 21324",
            "add IPv6 rule 21323: from all lookup main suppress_prefixlength 0",
            "add IPv6 rule 21324: not fwmark 0x534c lookup 21324",
        ])
    }

    func testRouteAllWithoutIPv6AndWithLocalNetworks() {
        let changes = HostRouting.tunnelPlan(
            interface: "t", addresses: [prefix("198.18.0.1/30")], routes: [prefix("0.0.0.0/0")],
            excludes: [prefix("2001:db8::/32")],
            routeAll: .init(resolvers: [IPAddress("9.9.9.9")!], routeLocal: true, ipv6: false), table: 100, fwmark: 7)
        XCTAssertEqual(changes.map(\.description), [
            "set link t up",
            "add address 198.18.0.1/30 dev t",
            "add route 0.0.0.0/0 dev t table 100",
            "add IPv4 rule 21321: fwmark 0x7 lookup main",
            "add IPv4 rule 21322: to 9.9.9.9/32 lookup 100",
            "add IPv4 rule 21324: not fwmark 0x7 lookup 100",
        ], "one default route although --route 0.0.0.0/0 was given too; no IPv6 at all; no suppress rule")
    }

    func testExcludesWorkWithPlainRoutes() {
        let changes = HostRouting.tunnelPlan(interface: "t", addresses: [], routes: [prefix("10.0.0.0/8")], excludes: [prefix("10.1.0.0/16")])
        XCTAssertEqual(changes.map(\.description).suffix(3), [
            "add route 10.0.0.0/8 dev t table 21324",
            "add route throw 10.1.0.0/16 table 21324",
            "add IPv4 rule 21324: not fwmark 0x534c lookup 21324",
        ])
    }

    func testKillSwitchRuleset() {
        let ruleset = FirewallRuleset(tun: "sluice0", relays: [SocketEndpoint("10.30.0.2:7000")!], fwmark: 0x534c, killSwitch: true, blockIPv6: false)
        XCTAssertEqual(ruleset.text, """
            create table inet sluice
            table inet sluice {
            \tchain output {
            \t\ttype filter hook output priority filter; policy drop;
            \t\toifname "lo" accept
            \t\tmeta mark 0x534c ip daddr 10.30.0.2 tcp dport 7000 accept
            \t\tmeta mark 0x534c ip daddr 10.30.0.2 udp dport 7000 accept
            \t\ticmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept
            \t\toifname "sluice0" accept
            \t\tudp sport 68 udp dport 67 accept
            \t\tudp sport 546 udp dport 547 accept
            \t\tcounter reject with icmpx type admin-prohibited
            \t}
            \tchain forward {
            \t\ttype filter hook forward priority filter; policy drop;
            \t\toifname "sluice0" accept
            \t\tcounter reject with icmpx type admin-prohibited
            \t}
            }

            """)
        XCTAssertEqual(ruleset.description, "nftables table inet sluice (kill switch)")
    }

    func testKillSwitchLetsCarriersAndUDPPathsThroughToEveryRelay() {
        let relays = [SocketEndpoint("10.30.0.2:7000")!, SocketEndpoint("[fd30::3]:7100")!]
        let text = FirewallRuleset(tun: "s", relays: relays, fwmark: 0x534c, killSwitch: true, blockIPv6: false).text
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let reject = lines.firstIndex(of: "counter reject with icmpx type admin-prohibited")!
        for rule in ["meta mark 0x534c ip daddr 10.30.0.2 tcp dport 7000 accept", "meta mark 0x534c ip daddr 10.30.0.2 udp dport 7000 accept",
                     "meta mark 0x534c ip6 daddr fd30::3 tcp dport 7100 accept", "meta mark 0x534c ip6 daddr fd30::3 udp dport 7100 accept"] {
            XCTAssertLessThan(lines.firstIndex(of: rule) ?? .max, reject, "each relay's carriers and UDP path pass: \(rule)\n\(text)")
        }
        XCTAssertFalse(text.contains("l4proto udp"), "a relay's UDP path takes its one port, not any")
    }

    func testIPv6BlockOnlyWithAnIPv6Relay() {
        let text = FirewallRuleset(tun: "s", relays: [SocketEndpoint("[fd30::2]:7000")!], fwmark: 1, killSwitch: false, blockIPv6: true).text
        XCTAssertTrue(text.contains("policy accept;"), text)
        XCTAssertTrue(text.contains("meta mark 0x1 ip6 daddr fd30::2 tcp dport 7000 accept"), text)
        XCTAssertTrue(text.contains("meta nfproto ipv6 counter reject with icmpv6 type admin-prohibited"), text)
        XCTAssertFalse(text.contains("chain forward"), text)
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertLessThan(lines.firstIndex { $0.hasPrefix("meta mark") }!, lines.firstIndex { $0.hasPrefix("meta nfproto ipv6") }!,
                          "carriers to an IPv6 relay pass before IPv6 is rejected")
    }

    func testSocksUpstreamLetsMarkedUDPToTheServerPass() {
        let text = FirewallRuleset(tun: "s", relays: [SocketEndpoint("[fd30::2]:1080")!], fwmark: 0x534c, killSwitch: true, blockIPv6: true,
                                   relayUDP: true).text
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let udp = lines.firstIndex(of: "meta mark 0x534c ip6 daddr fd30::2 meta l4proto udp accept")
        XCTAssertNotNil(udp, "a UDP association's port comes with each association: any port, that address, marked only")
        XCTAssertLessThan(udp ?? .max, lines.firstIndex { $0.hasPrefix("meta nfproto ipv6") }!, "before IPv6 is rejected")
        XCTAssertFalse(FirewallRuleset(tun: "s", relays: [SocketEndpoint("10.30.0.2:7000")!], fwmark: 1, killSwitch: true, blockIPv6: false).text
            .contains("l4proto udp"), "a relay takes TCP and its UDP path's one port only")
    }

    func testResolverContent() {
        let change = ResolverChange(backupPath: "/run/sluice/s.resolv.conf",
                                    nameservers: ["10.0.0.1", "fd00::1", "10.0.0.2", "10.0.0.3"].map { IPAddress($0)! }, owner: "tunnel s")
        XCTAssertEqual(change.content.split(separator: "\n").filter { $0.hasPrefix("nameserver") },
                       ["nameserver 10.0.0.1", "nameserver fd00::1", "nameserver 10.0.0.2"], "glibc reads three")
        XCTAssertTrue(change.content.hasPrefix("# Written by sluice up (tunnel s)"))
    }
}
