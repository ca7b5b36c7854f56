import SluiceTestSupport
import XCTest

@testable import SluiceWire

final class IPv4PacketTests: XCTestCase {
    func testDecodeSynFixture() throws {
        try Fixture.ipv4TCPSyn.withUnsafeBytes { buffer in
            let ip = try IPv4Packet(validating: buffer)
            XCTAssertEqual(ip.version, 4)
            XCTAssertEqual(ip.headerLength, 20)
            XCTAssertEqual(ip.typeOfService, 0)
            XCTAssertEqual(ip.totalLength, 60)
            XCTAssertEqual(ip.identification, 0x1C46)
            XCTAssertTrue(ip.dontFragment)
            XCTAssertFalse(ip.moreFragments)
            XCTAssertEqual(ip.fragmentOffset, 0)
            XCTAssertFalse(ip.isFragment)
            XCTAssertEqual(ip.timeToLive, 64)
            XCTAssertEqual(ip.protocol, .tcp)
            XCTAssertEqual(ip.headerChecksum, 0xDE99)
            XCTAssertEqual(ip.source, IPAddress("10.0.0.2"))
            XCTAssertEqual(ip.destination, IPAddress("93.184.216.34"))
            XCTAssertEqual(ip.optionsRange, 20..<20)
            XCTAssertEqual(ip.payloadRange, 20..<60)
            XCTAssertEqual(ip.payload.count, 40)
            XCTAssertTrue(ip.verifyChecksum())
        }
    }

    func testDecodeUDPFixture() throws {
        try Fixture.ipv4UDP.withUnsafeBytes { buffer in
            let ip = try IPv4Packet(validating: buffer)
            XCTAssertEqual(ip.identification, 0x4242)
            XCTAssertFalse(ip.dontFragment)
            XCTAssertEqual(ip.timeToLive, 17)
            XCTAssertEqual(ip.protocol, .udp)
            XCTAssertEqual(ip.source, IPAddress("192.168.1.10"))
            XCTAssertEqual(ip.destination, IPAddress("8.8.8.8"))
            XCTAssertEqual(ip.payloadRange, 20..<57)
            XCTAssertTrue(ip.verifyChecksum())
        }
    }

    func testDecodeFragmentFixture() throws {
        try Fixture.ipv4Fragment.withUnsafeBytes { buffer in
            let ip = try IPv4Packet(validating: buffer)
            XCTAssertTrue(ip.moreFragments)
            XCTAssertFalse(ip.dontFragment)
            XCTAssertEqual(ip.fragmentOffset, 24)
            XCTAssertTrue(ip.isFragment)
            XCTAssertEqual(ip.identification, 7)
            XCTAssertTrue(ip.verifyChecksum())
        }
    }

    func testOptionsAndTrailingBytes() throws {
        // IHL 6 (one 4-byte option word: NOP NOP NOP EOL), total length 28, then 4 bytes of padding
        // that are not part of the packet.
        var bytes = hex("46000018 00000000 40060000 01020304 05060708 01010100 aabbccdd")
        bytes[3] = 28
        bytes.withUnsafeMutableBytes { b in
            b.storeBytes(of: Checksum.checksum(UnsafeRawBufferPointer(rebasing: b[0..<24])).bigEndian, toByteOffset: 10, as: UInt16.self)
        }
        bytes += [0, 0, 0, 0]
        try bytes.withUnsafeBytes { buffer in
            let ip = try IPv4Packet(validating: buffer)
            XCTAssertEqual(ip.headerLength, 24)
            XCTAssertEqual(ip.optionsRange, 20..<24)
            XCTAssertEqual(ip.payloadRange, 24..<28)
            XCTAssertEqual(ip.bytes.count, 28)
            XCTAssertEqual(Array(ip.payload), [0xAA, 0xBB, 0xCC, 0xDD])
            XCTAssertTrue(ip.verifyChecksum())
        }
    }

    func testBadChecksumDetected() {
        for index in [0, 1, 4, 8, 10, 11, 12, 19] {
            var bytes = Fixture.ipv4TCPSyn
            bytes[index] ^= 0x01
            bytes.withUnsafeBytes { buffer in
                // Flipping the low bit of byte 0 changes the IHL to 4 (invalid); skip that one.
                guard let ip = try? IPv4Packet(validating: buffer) else { return XCTAssertEqual(index, 0) }
                XCTAssertFalse(ip.verifyChecksum(), "flipped byte \(index)")
            }
        }
    }

    func testTruncatedAtEveryLengthThrows() {
        let bytes = Fixture.ipv4TCPSyn
        for length in 0..<bytes.count {
            bytes.withUnsafeBytes { buffer in
                assertThrowsAny("at length \(length)") {
                    try IPv4Packet(validating: UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
                }
            }
        }
    }

    func testImpossibleLengths() {
        // (description, byte index, new value, expected error)
        let cases: [(String, Int, UInt8, WireError)] = [
            ("IHL 0", 0, 0x40, .badHeaderLength(.ipv4, 0)),
            ("IHL 4", 0, 0x44, .badHeaderLength(.ipv4, 16)),
            ("version 6", 0, 0x65, .badVersion(6)),
            ("version 0", 0, 0x05, .badVersion(0)),
            ("total length 61 > buffer", 3, 61, .badTotalLength(.ipv4, 61)),
            ("total length 19 < header", 3, 19, .badTotalLength(.ipv4, 19)),
        ]
        for (name, index, value, expected) in cases {
            var bytes = Fixture.ipv4TCPSyn
            bytes[index] = value
            bytes.withUnsafeBytes { buffer in
                assertThrows(expected) { try IPv4Packet(validating: buffer) }
            }
            _ = name
        }
        // IHL 15 (60 bytes) in a packet of exactly 60: valid header length, payload empty.
        var bytes = Fixture.ipv4TCPSyn
        bytes[0] = 0x4F
        bytes.withUnsafeBytes { buffer in XCTAssertEqual(try? IPv4Packet(validating: buffer).payloadRange, 60..<60) }
        // IHL 15 in a buffer cut to 40 bytes: the header's options run past the end.
        bytes.withUnsafeBytes { buffer in
            assertThrows(.truncated(.ipv4)) {
                try IPv4Packet(validating: UnsafeRawBufferPointer(rebasing: buffer[0..<40]))
            }
        }
        // Total length 0xFFFF in a short buffer.
        bytes = Fixture.ipv4TCPSyn
        bytes[2] = 0xFF
        bytes[3] = 0xFF
        bytes.withUnsafeBytes { buffer in
            assertThrows(.badTotalLength(.ipv4, 0xFFFF)) { try IPv4Packet(validating: buffer) }
        }
    }

    func testEmitReproducesFixtureHeaders() throws {
        for fixture in [Fixture.ipv4TCPSyn, Fixture.ipv4UDP, Fixture.ipv4Fragment, Fixture.ipv4TCPData] {
            let header = try fixture.withUnsafeBytes { buffer in IPv4Header(try IPv4Packet(validating: buffer)) }
            var out = [UInt8](repeating: 0xEE, count: IPv4Header.length)
            out.withUnsafeMutableBytes { header.emit(into: $0) }
            XCTAssertEqual(out, Array(fixture[0..<20]))
        }
    }

    func testEmitThenParseRoundTrip() throws {
        let header = IPv4Header(
            source: IPAddress("198.51.100.7")!, destination: IPAddress("203.0.113.250")!, protocol: .udp,
            payloadLength: 100, timeToLive: 3, typeOfService: 0xB8, identification: 0xBEEF,
            dontFragment: false, moreFragments: true, fragmentOffset: 1480)
        var out = [UInt8](repeating: 0, count: IPv4Header.length + 100)
        out.withUnsafeMutableBytes { header.emit(into: $0) }
        try out.withUnsafeBytes { buffer in
            let ip = try IPv4Packet(validating: buffer)
            XCTAssertTrue(ip.verifyChecksum())
            XCTAssertEqual(IPv4Header(ip), header)
            XCTAssertEqual(ip.totalLength, 120)
        }
    }
}
