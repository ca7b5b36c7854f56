import SluiceTestSupport
import SluiceWire
import XCTest

@testable import SluiceMux

/// Frames written out byte by byte from docs/protocol.md §3, so that the wire format cannot drift
/// from the document without a test failing. Layout: type u8 | stream u32 | length u16 | payload.
final class FrameFixtureTests: XCTestCase {
    static let fixtures: [(String, String, Frame)] = [
        (
            "OPEN IPv4",
            "01 00000001 000c  00040000 06 01 5db8d822 01bb",
            .open(
                stream: 1, window: 0x4_0000, proto: .tcp,
                destination: Destination(host: .ip(IPAddress("93.184.216.34")!), port: 443))
        ),
        (
            "OPEN IPv6",
            "01 00000005 0018  00000001 06 04 20010db8000000000000000000000001 20fb",
            .open(
                stream: 5, window: 1, proto: .tcp,
                destination: Destination(host: .ip(IPAddress("2001:db8::1")!), port: 8443))
        ),
        (
            "OPEN domain",
            "01 00000003 0014  00010000 06 03 0b 6578616d706c652e636f6d 0050",
            .open(
                stream: 3, window: 0x1_0000, proto: .tcp,
                destination: Destination(host: .domain("example.com"), port: 80))
        ),
        ("OPEN_OK", "02 00000001 0004  00100000", .openOK(stream: 1, window: 0x10_0000)),
        ("CREDIT", "04 00000001 0004  00010000", .credit(stream: 1, increment: 0x1_0000)),
        ("FIN", "05 00000001 0000", .fin(stream: 1)),
        ("RESET with message", "06 00000007 0003  01 6e6f", .reset(stream: 7, reason: .refused, message: "no")),
        ("RESET bare", "06 ffffffff 0001  03", .reset(stream: 0xFFFF_FFFF, reason: .timedOut, message: "")),
        ("PING", "07 00000000 0008  0102030405060708", .ping(0x0102_0304_0506_0708)),
        ("PONG", "08 00000000 0008  ffffffffffffffff", .pong(.max)),
        ("GO_AWAY", "09 00000000 0001  05", .goAway(.protocolError)),
        (
            "DATAGRAM_ERROR port unreachable",
            "0b 00000003 000a  01 0000 01 08080808 0035",
            .datagramError(stream: 3, code: .portUnreachable, mtu: 0, endpoint: SocketEndpoint("8.8.8.8:53")!)
        ),
        (
            "DATAGRAM_ERROR unreachable",
            "0b 00000007 000a  02 0000 01 08080808 0035",
            .datagramError(stream: 7, code: .unreachable, mtu: 0, endpoint: SocketEndpoint("8.8.8.8:53")!)
        ),
        (
            "DATAGRAM_ERROR too big",
            "0b 00000005 0016  03 0500 04 20010db8000000000000000000000001 01bb",
            .datagramError(stream: 5, code: .tooBig, mtu: 1280, endpoint: SocketEndpoint("[2001:db8::1]:443")!)
        ),
        (
            "DATAGRAM_ERROR forbidden",
            "0b 00000009 000a  04 0000 01 a9fea9fe 0050",
            .datagramError(stream: 9, code: .forbidden, mtu: 0, endpoint: SocketEndpoint("169.254.169.254:80")!)
        ),
        ("RESET forbidden", "06 0000000b 0001  06", .reset(stream: 11, reason: .forbidden, message: "")),
        ("HELLO", "0c 00000000 0004  00000001", .hello(.policyRefusals)),
        ("HELLO with unknown bits", "0c 00000000 0004  80000003", .hello(CarrierFeatures(rawValue: 0x8000_0003))),
        ("HELLO with the UDP path", "0c 00000000 0004  00000003", .hello([.policyRefusals, .udpPath])),
        ("UDP_PATH", "0d 00000000 0004  8badf00d", .udpPath(index: 0x8BAD_F00D)),
        ("UDP_PATH_USE on", "0e 00000000 0001  01", .udpPathUse(true)),
        ("UDP_PATH_USE off", "0e 00000000 0001  00", .udpPathUse(false)),
    ]

    /// The UDP path's carrier frames: what does not decode, and why (docs/protocol.md §3, §8).
    func testUDPPathFramesThatDoNotDecode() {
        let cases: [(String, String, FrameError)] = [
            ("index 0", "0d 00000000 0004  00000000", .badPathIndex),
            ("UDP_PATH of 3 bytes", "0d 00000000 0003  000001", .badLength(.udpPath, 3)),
            ("UDP_PATH of 5 bytes", "0d 00000000 0005  0000000101", .badLength(.udpPath, 5)),
            ("UDP_PATH on a stream", "0d 00000001 0004  00000001", .badStream(.udpPath, 1)),
            ("UDP_PATH_USE flag 2", "0e 00000000 0001  02", .badPathUse(2)),
            ("UDP_PATH_USE empty", "0e 00000000 0000", .badLength(.udpPathUse, 0)),
            ("UDP_PATH_USE on a stream", "0e 00000003 0001  01", .badStream(.udpPathUse, 3)),
            ("UDP_PATH cut short", "0d 00000000 0004  0000", .truncated),
        ]
        for (name, bytes, expected) in cases {
            XCTAssertEqual(decodeAll(hex(bytes)).error, expected, name)
        }
    }

    func testEncodeMatchesFixtures() throws {
        for (name, bytes, frame) in Self.fixtures {
            XCTAssertEqual(try encode([frame]), hex(bytes), name)
            XCTAssertEqual(frame.encodedLength, hex(bytes).count, name)
        }
    }

    func testDecodeMatchesFixtures() {
        for (name, bytes, frame) in Self.fixtures {
            let (frames, error) = decodeAll(hex(bytes))
            XCTAssertNil(error, name)
            XCTAssertEqual(frames, [.control(frame)], name)
        }
    }

    func testDataFixture() {
        let bytes = hex("03 00000005 0002 6869")
        XCTAssertEqual(decodeAll(bytes).frames, [.data(stream: 5, payload: Array("hi".utf8))])
        var storage = [UInt8](repeating: 0, count: 64)
        let count = storage.withUnsafeMutableBytes { buffer in
            var encoder = FrameEncoder(buffer)
            XCTAssertTrue(Array("hi".utf8).withUnsafeBytes { encoder.appendData(stream: 5, payload: $0) })
            return encoder.count
        }
        XCTAssertEqual(Array(storage[0..<count]), bytes)
    }

    func testTypeAndReasonNumbers() {
        XCTAssertEqual(FrameType.allCases.map(\.rawValue), Array(1...14))
        XCTAssertEqual(
            FrameType.allCases.map(\.description),
            ["OPEN", "OPEN_OK", "DATA", "CREDIT", "FIN", "RESET", "PING", "PONG", "GO_AWAY", "DATAGRAM", "DATAGRAM_ERROR",
             "HELLO", "UDP_PATH", "UDP_PATH_USE"])
        XCTAssertEqual(DatagramErrorCode.allCases.map(\.rawValue), [1, 2, 3, 4])
        XCTAssertEqual(DatagramErrorCode.allCases, [.portUnreachable, .unreachable, .tooBig, .forbidden])
        XCTAssertEqual(
            ResetReason.allCases.map(\.rawValue), [0, 1, 2, 3, 4, 5, 6])
        XCTAssertEqual(
            ResetReason.allCases, [.closed, .refused, .unreachable, .timedOut, .limit, .protocolError, .forbidden])
        XCTAssertEqual(CarrierFeatures.policyRefusals.rawValue, 1, "docs/protocol.md §1.1: bit 0")
        XCTAssertEqual(CarrierFeatures.udpPath.rawValue, 2, "docs/protocol.md §1.1: bit 1")
        XCTAssertEqual(ResetReason.refused.description, "the destination refused the connection")
    }
}
