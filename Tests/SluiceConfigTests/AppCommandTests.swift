import XCTest
@testable import SluiceConfig

final class AppCommandTests: XCTestCase {
    func testExecTakesEverythingAfterDashes() throws {
        let command = try CommandLineParser.parse(arguments: ["exec", "--tun", "wg1", "--bypass", "--", "curl", "--max-time", "3", "-h"])
        XCTAssertEqual(command, .exec(ExecConfig(tun: "wg1", bypass: true, program: ["curl", "--max-time", "3", "-h"])))
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["exec", "--", "sh"]),
                       .exec(ExecConfig(tun: nil, bypass: false, program: ["sh"])))
    }

    func testExecWithoutProgramIsRefused() {
        for arguments in [["exec"], ["exec", "--"], ["exec", "--tun", "x", "--"]] {
            XCTAssertThrowsError(try CommandLineParser.parse(arguments: arguments)) { error in
                XCTAssertTrue("\(error)".contains("no program given"), "\(error)")
            }
        }
        XCTAssertThrowsError(try CommandLineParser.parse(arguments: ["exec", "curl"]))  // the program needs --
    }

    func testCGroupAddAndDel() throws {
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["cgroup", "add", "1234", "--tun", "t0"]),
                       .cgroup(CGroupConfig(tun: "t0", action: .add, pid: 1234)))
        XCTAssertEqual(try CommandLineParser.parse(arguments: ["cgroup", "del", "77"]),
                       .cgroup(CGroupConfig(tun: nil, action: .del, pid: 77)))
        for bad in [["cgroup"], ["cgroup", "add"], ["cgroup", "move", "1"], ["cgroup", "add", "x"], ["cgroup", "add", "0"],
                    ["cgroup", "add", "1", "2"]] {
            XCTAssertThrowsError(try CommandLineParser.parse(arguments: bad), "\(bad)")
        }
    }

    func testOtherCommandsTakeNoWords() {
        XCTAssertThrowsError(try CommandLineParser.parse(arguments: ["down", "--", "x"]))
    }

    func testAppCGroupPaths() {
        XCTAssertEqual(ClientConfig.cgroupPath("/system.slice/backup.service/"), "system.slice/backup.service")
        XCTAssertEqual(ClientConfig.cgroupPath("a//b"), "a/b")
        for bad in ["", "/", "../etc", "a/./b", "a\"b", "a\nb"] {
            XCTAssertNil(ClientConfig.cgroupPath(bad), bad)
        }
    }
}
