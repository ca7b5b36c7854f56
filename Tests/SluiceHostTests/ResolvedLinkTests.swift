import SluiceWire
import XCTest

@testable import SluiceHost

/// The D-Bus calls that configure systemd-resolved, built as plain values from the settings.
final class ResolvedLinkTests: XCTestCase {
    private func call(_ member: String, _ arguments: [DBusValue]) -> DBusCall {
        DBusCall(destination: "org.freedesktop.resolve1", path: "/org/freedesktop/resolve1",
                 interface: "org.freedesktop.resolve1.Manager", member: member, arguments: arguments)
    }

    func testEveryNameThroughTheTunnel() {
        let link = ResolvedLink(interface: "sluice0", servers: [IPAddress("10.20.0.2")!, IPAddress("fd20::2")!])
        XCTAssertEqual(link.calls(index: 7), [
            call("SetLinkDNS", [.int32(7), .array(element: "(iay)", [
                .structure([.int32(2), .bytes([10, 20, 0, 2])]),
                .structure([.int32(10), .bytes([0xfd, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2])]),
            ])]),
            call("SetLinkDomains", [.int32(7), .array(element: "(sb)", [.structure([.string("."), .boolean(true)])])]),
            call("SetLinkDefaultRoute", [.int32(7), .boolean(true)]),
        ])
        XCTAssertEqual(link.description, "point systemd-resolved's link sluice0 at 10.20.0.2, fd20::2 for ~. (default route)")
    }

    func testSplitDomainsAreRoutingOnlyAndNotTheDefaultRoute() {
        let link = ResolvedLink(interface: "sluice0", servers: [IPAddress("10.20.0.2")!],
                                domains: [DNSName("corp.test")!, DNSName("Lab.Example.")!])
        let calls = link.calls(index: 12)
        XCTAssertEqual(calls.map(\.member), ["SetLinkDNS", "SetLinkDomains", "SetLinkDefaultRoute"])
        XCTAssertEqual(calls[1].arguments, [.int32(12), .array(element: "(sb)", [
            .structure([.string("corp.test"), .boolean(true)]), .structure([.string("lab.example"), .boolean(true)]),
        ])])
        XCTAssertEqual(calls[2].arguments, [.int32(12), .boolean(false)])
        XCTAssertEqual(link.description, "point systemd-resolved's link sluice0 at 10.20.0.2 for ~corp.test ~lab.example")
    }

    func testSignaturesAreResolvedsOwn() {
        // org.freedesktop.resolve1(5): SetLinkDNS(i ifindex, a(iay) addresses), SetLinkDomains(i, a(sb)),
        // SetLinkDefaultRoute(i, b), RevertLink(i).
        let link = ResolvedLink(interface: "s", servers: [], domains: [])
        XCTAssertEqual(link.calls(index: 1).map(\.description), [
            "org.freedesktop.resolve1.Manager.SetLinkDNS(ia(iay))",
            "org.freedesktop.resolve1.Manager.SetLinkDomains(ia(sb))",
            "org.freedesktop.resolve1.Manager.SetLinkDefaultRoute(ib)",
        ])
        XCTAssertEqual(ResolvedLink.revertCall(index: 3), call("RevertLink", [.int32(3)]))
    }
}
