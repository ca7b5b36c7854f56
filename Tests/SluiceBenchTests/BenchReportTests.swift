import Foundation
import SluiceWire
import XCTest

@testable import SluiceBench

/// `sluice bench`'s output: the table and the hand-written JSON line (checked with Foundation's parser).
final class BenchReportTests: XCTestCase {
    private let report = BenchReport(
        relay: SocketEndpoint("[fd10::2]:7000")!, carriers: 2, streams: 4, handshakeNanoseconds: 1_234_567, openNanoseconds: 456_789,
        phases: [BenchReport.Phase(direction: .up, bytes: 2_500_000_000, nanoseconds: 10_000_000_000),
                 BenchReport.Phase(direction: .down, bytes: 62_500_000, nanoseconds: 2_000_000_000)])

    func testFixedDecimals() {
        XCTAssertEqual(BenchReport.fixed(2.345, 2), "2.35")
        XCTAssertEqual(BenchReport.fixed(0.05, 1), "0.1")
        XCTAssertEqual(BenchReport.fixed(3, 0), "3")
        XCTAssertEqual(BenchReport.fixed(1.004, 2), "1.00")
        XCTAssertEqual(BenchReport.fixed(-1.5, 1), "-1.5")
        XCTAssertEqual(BenchReport.fixed(.nan, 2), "0")
        XCTAssertEqual(BenchReport.rate(2.31e9), "2.31 Gbit/s")
        XCTAssertEqual(BenchReport.rate(512.34e6), "512.3 Mbit/s")
    }

    func testJSONLineParsesAndCarriesTheFigures() throws {
        let line = report.json
        XCTAssertFalse(line.contains("\n"))
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        XCTAssertEqual(object["relay"] as? String, "[fd10::2]:7000")
        XCTAssertEqual(object["carriers"] as? Int, 2)
        XCTAssertEqual(object["streams"] as? Int, 4)
        XCTAssertEqual(try XCTUnwrap(object["handshake_ms"] as? Double), 1.235, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(object["open_ms"] as? Double), 0.457, accuracy: 1e-9)
        let up = try XCTUnwrap(object["up"] as? [String: Any])
        XCTAssertEqual(up["bytes"] as? Int, 2_500_000_000)
        XCTAssertEqual(try XCTUnwrap(up["seconds"] as? Double), 10, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(up["gbps"] as? Double), 2, accuracy: 1e-9)
        let down = try XCTUnwrap(object["down"] as? [String: Any])
        XCTAssertEqual(try XCTUnwrap(down["gbps"] as? Double), 0.25, accuracy: 1e-9)
    }

    func testTable() {
        let lines = report.table.split(separator: "\n")
        XCTAssertEqual(lines.count, 5)
        XCTAssertEqual(lines[0], "relay [fd10::2]:7000, 2 carriers, 4 streams per direction")
        XCTAssertTrue(lines[1].hasPrefix("handshake  1.23 ms"), String(lines[1]))
        XCTAssertTrue(lines[3].hasPrefix("up") && lines[3].hasSuffix("2.00 Gbit/s"), String(lines[3]))
        XCTAssertTrue(lines[4].hasPrefix("down") && lines[4].hasSuffix("250.0 Mbit/s"), String(lines[4]))
    }

    func testEscaping() {
        XCTAssertEqual(BenchReport.escaped("a\"b\\c\n"), "a\\\"b\\\\c\\u000a")
    }
}
