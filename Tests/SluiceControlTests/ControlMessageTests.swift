import XCTest
@testable import SluiceControl

final class ControlMessageTests: XCTestCase {
    func testRequestsRoundTrip() {
        let requests: [ControlRequest] = [.newGroup(bypass: false), .newGroup(bypass: true), .done(group: "app-12"), .add(pid: 42), .del(pid: 7)]
        for request in requests {
            XCTAssertTrue(request.line.hasSuffix("\n"))
            XCTAssertEqual(ControlRequest(line: String(request.line.dropLast())), request)
        }
        XCTAssertEqual(ControlRequest.newGroup(bypass: true).line, "new bypass\n")
    }

    func testBadRequestsAreRefused() {
        for line in ["", "new", "new other", "done ../../etc", "done app-1/x", "done other", "add", "add -1", "add 0",
                     "add x", "del 1 2", "kill 1"] {
            XCTAssertNil(ControlRequest(line: line), line)
        }
    }

    func testReplies() {
        XCTAssertEqual(ControlReply(line: "ok"), .ok(""))
        XCTAssertEqual(ControlReply(line: "ok /sys/fs/cgroup/sluice/t/app-1"), .ok("/sys/fs/cgroup/sluice/t/app-1"))
        XCTAssertEqual(ControlReply(line: "error no such thing"), .error("no such thing"))
        XCTAssertNil(ControlReply(line: "maybe"))
        XCTAssertEqual(ControlReply.error("two\nlines").line, "error two lines\n")
        XCTAssertEqual(ControlReply.ok("").line, "ok\n")
    }
}
