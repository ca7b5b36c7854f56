import XCTest
@testable import SluiceHost

final class CGroupTests: XCTestCase {
    static let hybrid = """
    24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
    26 24 0:24 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
    27 26 0:25 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
    28 26 0:26 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd
    """

    func testMountinfoParsing() {
        XCTAssertEqual(CGroupMount.parse(mountinfo: Self.hybrid)?.mountPoint, "/sys/fs/cgroup/unified")
        let unified = "30 1 0:27 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
        XCTAssertEqual(CGroupMount.parse(mountinfo: unified)?.mountPoint, "/sys/fs/cgroup")
        // Optional fields vary in number; an escaped space in the mount point is decoded.
        let odd = "40 1 0:30 / /mnt/my\\040cg rw shared:4 master:2 - cgroup2 none rw\n"
        XCTAssertEqual(CGroupMount.parse(mountinfo: odd)?.mountPoint, "/mnt/my cg")
        XCTAssertNil(CGroupMount.parse(mountinfo: "28 26 0:26 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw\n"))
        XCTAssertNil(CGroupMount.parse(mountinfo: ""))
    }

    func testNftPathsAndLevels() {
        let hybrid = CGroupMount(mountPoint: "/sys/fs/cgroup/unified")
        XCTAssertEqual(hybrid.nftPath("sluice/t0"), "unified/sluice/t0")
        XCTAssertEqual(hybrid.directory("sluice/t0"), "/sys/fs/cgroup/unified/sluice/t0")
        let plain = CGroupMount(mountPoint: "/sys/fs/cgroup/")
        XCTAssertEqual(plain.nftPath("system.slice/backup.service"), "system.slice/backup.service")
        XCTAssertNil(CGroupMount(mountPoint: "/mnt/cg").nftPath("sluice/t0"))
        XCTAssertEqual(CGroupMount.level("sluice/t0"), 2)
        XCTAssertEqual(CGroupMount.level("system.slice/backup.service"), 2)
        XCTAssertEqual(CGroupMount.level("a/b/c"), 3)
    }

    func testAppRulesetText() {
        let include = AppRuleset(tun: "sluice0", mark: 0x534d,
                                 groups: [.init(nftPath: "unified/sluice/sluice0", level: 2)], bypass: false)
        XCTAssertEqual(include.table, "inet sluice_apps_sluice0")
        XCTAssertEqual(include.text, """
            create table inet sluice_apps_sluice0
            table inet sluice_apps_sluice0 {
            \tchain output {
            \t\ttype route hook output priority mangle; policy accept;
            \t\tsocket cgroupv2 level 2 "unified/sluice/sluice0" meta mark set 0x534d
            \t}
            \tchain postrouting {
            \t\ttype nat hook postrouting priority srcnat; policy accept;
            \t\tmeta mark 0x534d oifname "sluice0" masquerade
            \t}
            }

            """)
        let bypass = AppRuleset(tun: "wg-1.x", mark: 0x534d, groups: [], bypass: true)
        XCTAssertEqual(bypass.table, "inet sluice_apps_wg_1_x")
        XCTAssertTrue(bypass.text.contains("meta mark 0x534d oifname != { \"wg-1.x\", \"lo\" } masquerade"))
    }

    func testAppPlan() throws {
        let mount = CGroupMount(mountPoint: "/sys/fs/cgroup/unified")
        let plan = try XCTUnwrap(HostRouting.appPlan(mount: mount, tun: "t0", interface: "t0", extraGroups: ["system.slice/b.service"],
                                                    bypass: false, ipv6: true, appTable: 21326))
        XCTAssertEqual(plan.first, .cgroupTree(path: "/sys/fs/cgroup/unified/sluice/t0", root: "/sys/fs/cgroup/unified"))
        XCTAssertEqual(plan.map(\.description).filter { $0.contains("rule") }.count, 2)
        guard case .appFirewall(let rules) = plan.last else { return XCTFail("no firewall last: \(plan)") }
        XCTAssertEqual(rules.groups, [.init(nftPath: "unified/sluice/t0", level: 2), .init(nftPath: "unified/system.slice/b.service", level: 2)])
        let bypass = try XCTUnwrap(HostRouting.appPlan(mount: mount, tun: "t0", interface: "t0", extraGroups: [], bypass: true,
                                                      ipv6: false, appTable: 21326))
        XCTAssertEqual(bypass.count, 3)  // cgroup, one rule (IPv4 to main), table
        XCTAssertEqual(bypass[1], .rule(PolicyRule(family: .ipv4, priority: 21320, table: 254, fwmark: 0x534d)))
        XCTAssertNil(HostRouting.appPlan(mount: CGroupMount(mountPoint: "/mnt/cg"), tun: "t0", interface: "t0", extraGroups: [],
                                         bypass: false, ipv6: true, appTable: 21326))
    }

    func testCGroupStepSurvivesTheStateFile() throws {
        let step = HostStep.cgroupTree(path: "/sys/fs/cgroup/sluice/t0", root: "/sys/fs/cgroup")
        let data = try JSONEncoder().encode([step])
        XCTAssertEqual(try JSONDecoder().decode([HostStep].self, from: data), [step])
    }
}
