import SluiceTestSupport
import SluiceWire
import XCTest

@testable import SluiceMux

/// The UDP path's packets written out byte by byte from docs/protocol.md §8: the clear header, and
/// the plaintexts of DATAGRAM and PROBE once decrypted; truncated and impossible ones.
final class PathPacketTests: XCTestCase {
    /// A header and 24 bytes standing for ciphertext and tag (no crypto here).
    private func packet(_ header: String, bodyBytes: Int = 24) -> [UInt8] { hex(header) + [UInt8](repeating: 0xAA, count: bodyBytes) }

    func testHeaderFixtures() throws {
        let cases: [(String, PathHeader)] = [
            ("01 000000 8badf00d 0000000000000000", PathHeader(kind: .datagram, index: 0x8BAD_F00D, counter: 0)),
            ("02 000000 00000001 0000000000000005", PathHeader(kind: .probe, index: 1, counter: 5)),
            ("03 000000 ffffffff 7fffffffffffffff", PathHeader(kind: .probeReply, index: .max, counter: 1 << 63 - 1)),
            ("04 000000 00000007 0000000000000102", PathHeader(kind: .bundle, index: 7, counter: 0x102)),
        ]
        for (bytes, header) in cases {
            let parsed = try packet(bytes).withUnsafeBytes { try PathHeader(parsing: $0) }
            XCTAssertEqual(parsed, header, bytes)
            var out = [UInt8](repeating: 0xFF, count: PathHeader.length)
            out.withUnsafeMutableBytes { header.emit(into: $0) }
            XCTAssertEqual(out, hex(bytes), bytes)
        }
    }

    func testHeadersThatDoNotParse() {
        let cases: [([UInt8], PathPacketError)] = [
            ([], .tooShort(0)),
            (hex("01 000000 00000001 0000000000000000"), .tooShort(16)),
            (packet("01 000000 00000001 0000000000000000", bodyBytes: 23), .tooShort(39)),
            (packet("05 000000 00000001 0000000000000000"), .unknownKind(5)),
            (packet("00 000000 00000001 0000000000000000"), .unknownKind(0)),
            (packet("01 000100 00000001 0000000000000000"), .reservedBytesSet),
        ]
        for (bytes, expected) in cases {
            XCTAssertThrowsError(try bytes.withUnsafeBytes { try PathHeader(parsing: $0) }) { error in
                XCTAssertEqual(error as? PathPacketError, expected, "\(bytes)")
            }
        }
        XCTAssertEqual(PathHeader.minimumPacket, 40)
    }

    func testDatagramPlaintextFixtures() throws {
        let cases: [(String, UInt32, SocketEndpoint, [UInt8])] = [
            ("00000003 01 08080808 0035 6869", 3, SocketEndpoint("8.8.8.8:53")!, Array("hi".utf8)),
            ("00000005 04 20010db8000000000000000000000001 01bb", 5, SocketEndpoint("[2001:db8::1]:443")!, []),
        ]
        for (bytes, stream, endpoint, data) in cases {
            let decoded = try hex(bytes).withUnsafeBytes { plaintext throws -> (UInt32, SocketEndpoint, [UInt8]) in
                guard case .datagram(let s, let e, let p) = try PathMessage.decode(.datagram, plaintext) else { throw PathPacketError.badDatagram }
                return (s, e, Array(p))
            }
            XCTAssertEqual(decoded.0, stream)
            XCTAssertEqual(decoded.1, endpoint)
            XCTAssertEqual(decoded.2, data)
            var out = [UInt8](repeating: 0, count: 64)
            let n = out.withUnsafeMutableBytes { buffer in
                data.withUnsafeBytes { PathMessage.encodeDatagram(stream: stream, endpoint: endpoint, payload: $0, into: buffer) }
            }
            XCTAssertEqual(n.map { Array(out[0..<$0]) }, hex(bytes))
            XCTAssertEqual(PathMessage.datagramOverhead(endpoint: endpoint) + data.count, hex(bytes).count)
        }
    }

    func testDatagramPlaintextsThatDoNotDecode() {
        let cases: [(String, PathPacketError)] = [
            ("", .badDatagram),
            ("00000003 01 080808", .badDatagram),  // endpoint cut short
            ("00000003 04 20010db8 0000", .badDatagram),  // IPv6 endpoint cut short
            ("00000000 01 08080808 0035", .badDatagram),  // stream 0
            ("00000003 03 08080808 0035", .badAddressType(3)),  // a domain has no place here
            ("00000003 02 08080808 0035", .badAddressType(2)),
        ]
        for (bytes, expected) in cases {
            XCTAssertThrowsError(try hex(bytes).withUnsafeBytes { try PathMessage.decode(.datagram, $0) }, bytes) { error in
                XCTAssertEqual(error as? PathPacketError, expected, bytes)
            }
        }
        var small = [UInt8](repeating: 0, count: 12)
        let n = small.withUnsafeMutableBytes { buffer in
            [UInt8](repeating: 1, count: 2).withUnsafeBytes { PathMessage.encodeDatagram(stream: 1, endpoint: SocketEndpoint("8.8.8.8:53")!, payload: $0, into: buffer) }
        }
        XCTAssertNil(n, "a datagram that does not fit is not written")
    }

    func testProbePlaintexts() throws {
        let bytes = hex("0102030405060708 0000 0000")
        let decoded = try bytes.withUnsafeBytes { try PathMessage.decode(.probe, $0) }
        guard case .probe(let opaque, let length) = decoded else { return XCTFail("not a probe") }
        XCTAssertEqual(opaque, 0x0102_0304_0506_0708)
        XCTAssertEqual(length, 12)
        var out = [UInt8](repeating: 0xEE, count: 12)
        XCTAssertEqual(out.withUnsafeMutableBytes { PathMessage.encodeProbe(opaque: opaque, length: 12, into: $0) }, 12)
        XCTAssertEqual(out, bytes, "padded with zeros")
        XCTAssertThrowsError(try hex("01020304050607").withUnsafeBytes { try PathMessage.decode(.probeReply, $0) })
        XCTAssertNil(out.withUnsafeMutableBytes { PathMessage.encodeProbe(opaque: 1, length: 7, into: $0) }, "shorter than its opaque")
        XCTAssertNil(out.withUnsafeMutableBytes { PathMessage.encodeProbe(opaque: 1, length: 13, into: $0) }, "longer than the room")
    }

    /// A BUNDLE: two entries, each a length and a DATAGRAM plaintext, IPv4 then IPv6.
    private let bundleFixture = "000d 00000003 01 08080808 0035 6869" + " 0017 00000005 04 20010db8000000000000000000000001 01bb"

    func testBundlePlaintextFixture() throws {
        let bytes = hex(bundleFixture)
        let decoded = try bytes.withUnsafeBytes { plaintext throws -> [(UInt32, SocketEndpoint, [UInt8])] in
            guard case .bundle(let entries) = try PathMessage.decode(.bundle, plaintext) else { throw PathPacketError.badBundle }
            XCTAssertEqual(entries.count, 2)
            return entries.map { ($0.stream, $0.endpoint, Array($0.payload)) }
        }
        XCTAssertEqual(decoded.map(\.0), [3, 5])
        XCTAssertEqual(decoded.map(\.1), [SocketEndpoint("8.8.8.8:53")!, SocketEndpoint("[2001:db8::1]:443")!])
        XCTAssertEqual(decoded.map(\.2), [Array("hi".utf8), []])

        var out = [UInt8](repeating: 0, count: 64)
        let first = out.withUnsafeMutableBytes { buffer in
            Array("hi".utf8).withUnsafeBytes { PathMessage.encodeBundleEntry(stream: 3, endpoint: SocketEndpoint("8.8.8.8:53")!, payload: $0, into: buffer) }
        }
        let second = out.withUnsafeMutableBytes { buffer in
            PathMessage.encodeBundleEntry(stream: 5, endpoint: SocketEndpoint("[2001:db8::1]:443")!, payload: UnsafeRawBufferPointer(start: nil, count: 0),
                                          into: UnsafeMutableRawBufferPointer(rebasing: buffer[first!...]))
        }
        XCTAssertEqual(Array(out[0..<first! + second!]), bytes)
        XCTAssertNil(out.withUnsafeMutableBytes { buffer in
            Array("hi".utf8).withUnsafeBytes { PathMessage.encodeBundleEntry(stream: 3, endpoint: SocketEndpoint("8.8.8.8:53")!, payload: $0,
                                                                              into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<14])) }
        }, "an entry that does not fit is not written")
    }

    func testBundlePlaintextsThatDoNotDecode() {
        let cases: [(String, PathPacketError)] = [
            ("", .badBundle),  // no entry at all
            ("00", .badBundle),  // a length cut short
            ("000d 00000003 01 08080808 0035 68", .badBundle),  // the entry runs past the end
            ("000d 00000003 01 08080808 0035 6869 00", .badBundle),  // a stray byte after the last entry
            ("0000", .badDatagram),  // an empty entry
            ("0009 00000003 01 08080808", .badDatagram),  // too short for its endpoint
            ("000d 00000003 01 08080808 0035 6869 000b 00000000 01 08080808 0035", .badDatagram),  // stream 0 in the second
            ("000b 00000003 02 08080808 0035", .badAddressType(2)),
        ]
        for (bytes, expected) in cases {
            XCTAssertThrowsError(try hex(bytes).withUnsafeBytes { try PathMessage.decode(.bundle, $0) }, bytes) { error in
                XCTAssertEqual(error as? PathPacketError, expected, bytes)
            }
        }
    }
}
