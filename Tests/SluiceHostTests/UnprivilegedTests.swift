import Glibc
import SluiceWire
import XCTest

@testable import SluiceHost

/// What works, and what errors say, without privileges. Runs as any user.
final class UnprivilegedTests: XCTestCase {
    func testPlanOrder() {
        let changes = HostRouting.tunnelPlan(
            interface: "sluice0", mtu: 1400, addresses: [IPPrefix("10.20.0.1/24")!, IPPrefix("fd20::1/64")!],
            routes: [IPPrefix("10.20.0.0/24")!, IPPrefix("fd20::/64")!])
        XCTAssertEqual(changes.map(\.description), [
            "set mtu 1400 on sluice0",
            "set link sluice0 up",
            "add address 10.20.0.1/24 dev sluice0",
            "add address fd20::1/64 dev sluice0",
            "add route 10.20.0.0/24 dev sluice0 table 21324",
            "add route fd20::/64 dev sluice0 table 21324",
            "add IPv4 rule 21324: not fwmark 0x534c lookup 21324",
            "add IPv6 rule 21324: not fwmark 0x534c lookup 21324",
        ])
        XCTAssertFalse(HostRouting.tunnelPlan(interface: "s", addresses: [], routes: [IPPrefix("10.0.0.0/8")!]).contains(.rule(PolicyRule(family: .ipv6, priority: 21324, table: 21324, fwmark: 0x534c, invert: true))), "no rule for a family without routes")
    }

    /// Only meaningful for a user without CAP_NET_ADMIN (run the test binary as such a user).
    func testCreatingTunWithoutPrivilegeSaysWhatToDo() throws {
        guard geteuid() != 0 else { throw XCTSkip("runs only as an unprivileged user") }
        XCTAssertThrowsError(try TunDevice(name: "slperm0")) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("— run as root"), text)
            XCTAssertTrue(text.contains("slperm0") && (text.contains("(EPERM)") || text.contains("(EACCES)")), text)
        }
    }
}
