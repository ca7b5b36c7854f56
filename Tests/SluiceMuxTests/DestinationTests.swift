import SluiceTestSupport
import SluiceWire
import XCTest

@testable import SluiceMux

final class DestinationTests: XCTestCase {
    func testEncodeDecodeEachAddressType() throws {
        let cases: [(Destination, String)] = [
            (Destination(host: .ip(IPAddress("10.1.2.3")!), port: 22), "01 0a010203 0016"),
            (Destination(host: .ip(IPAddress("fd00::1")!), port: 53), "04 fd000000000000000000000000000001 0035"),
            (Destination(host: .domain("a.io"), port: 443), "03 04 612e696f 01bb"),
        ]
        for (destination, expectedHex) in cases {
            let expected = hex(expectedHex)
            XCTAssertEqual(destination.encodedLength, expected.count)
            var out = [UInt8](repeating: 0xEE, count: expected.count + 3)
            let end = try out.withUnsafeMutableBytes { try destination.encode(into: $0, at: 2) }
            XCTAssertEqual(end, 2 + expected.count)
            XCTAssertEqual(Array(out[2..<end]), expected)
            // Decoding reads just its own bytes, whatever follows.
            let (decoded, length) = try (expected + [9, 9]).withUnsafeBytes { try Destination.decode(from: $0) }
            XCTAssertEqual(decoded, destination)
            XCTAssertEqual(length, expected.count)
        }
    }

    func testDecodeErrors() {
        let cases: [(String, FrameError)] = [
            ("", .truncated), ("01 0a0102", .truncated), ("04 00", .truncated), ("03", .truncated),
            ("03 05 6162", .truncated), ("03 00 0050", .badDomain), ("05 00", .badAddressType(5)),
        ]
        for (bytes, expected) in cases {
            let result = hex(bytes).withUnsafeBytes { buffer in
                Result { () throws(FrameError) in try Destination.decode(from: buffer).0 }
            }
            XCTAssertEqual(result, .failure(expected), bytes)
        }
    }
}
