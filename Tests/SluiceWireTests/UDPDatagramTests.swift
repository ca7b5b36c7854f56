import XCTest

@testable import SluiceWire

final class UDPDatagramTests: XCTestCase {
    func testDecodeFixture() throws {
        try Fixture.ipv4UDP.withUnsafeBytes { buffer in
            let ip = try IPv4Packet(validating: buffer)
            let udp = try UDPDatagram(validating: ip.payload)
            XCTAssertEqual(udp.sourcePort, 5353)
            XCTAssertEqual(udp.destinationPort, 53)
            XCTAssertEqual(udp.length, 37)
            XCTAssertEqual(udp.checksum, 0x9D88)
            XCTAssertEqual(udp.payloadRange, 8..<37)
            XCTAssertEqual(Array(udp.payload.prefix(2)), [0xAB, 0xCD])
            XCTAssertTrue(udp.verifyChecksum(source: ip.source, destination: ip.destination))
        }
    }

    func testBadChecksumDetected() throws {
        var bytes = Fixture.ipv4UDP
        bytes[40] ^= 0x10
        try bytes.withUnsafeBytes { buffer in
            let ip = try IPv4Packet(validating: buffer)
            XCTAssertFalse(try UDPDatagram(validating: ip.payload).verifyChecksum(source: ip.source, destination: ip.destination))
        }
    }

    func testZeroChecksumAllowedOverIPv4OnlyNotIPv6() throws {
        var bytes = Array(Fixture.ipv4UDP[20...])
        bytes[6] = 0
        bytes[7] = 0
        try bytes.withUnsafeBytes { buffer in
            let udp = try UDPDatagram(validating: buffer)
            XCTAssertTrue(udp.verifyChecksum(source: IPAddress("192.168.1.10")!, destination: IPAddress("8.8.8.8")!))
            XCTAssertFalse(udp.verifyChecksum(source: IPAddress("fe80::1")!, destination: IPAddress("ff02::16")!))
        }
    }

    func testLengthField() {
        let datagram = Array(Fixture.ipv4UDP[20...])  // 37 bytes
        let cases: [(UInt16, WireError?)] = [
            (0, .badTotalLength(.udp, 0)), (7, .badTotalLength(.udp, 7)), (8, nil), (36, nil), (37, nil),
            (38, .badTotalLength(.udp, 38)), (0xFFFF, .badTotalLength(.udp, 0xFFFF)),
        ]
        for (length, expected) in cases {
            var bytes = datagram
            bytes[4] = UInt8(length >> 8)
            bytes[5] = UInt8(length & 0xFF)
            bytes.withUnsafeBytes { buffer in
                if let expected {
                    assertThrows(expected) { try UDPDatagram(validating: buffer) }
                } else {
                    XCTAssertEqual(try? UDPDatagram(validating: buffer).bytes.count, Int(length))
                }
            }
        }
        for length in 0..<8 {
            datagram.withUnsafeBytes { buffer in
                assertThrows(.truncated(.udp)) {
                    try UDPDatagram(validating: UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
                }
            }
        }
    }

    func testEmitReproducesFixture() {
        var out = Array(Fixture.ipv4UDP[20...])
        for i in 0..<8 { out[i] = 0xEE }
        out.withUnsafeMutableBytes {
            UDPHeader(sourcePort: 5353, destinationPort: 53)
                .emit(into: $0, source: IPAddress("192.168.1.10")!, destination: IPAddress("8.8.8.8")!)
        }
        XCTAssertEqual(out, Array(Fixture.ipv4UDP[20...]))
    }

    func testEmitSendsComputedZeroAsAllOnes() throws {
        let source = IPAddress("2001:db8::1")!, destination = IPAddress("2001:db8::2")!
        // First emit with a zero payload word, then set the payload word to the checksum found: the
        // sum becomes 0xFFFF and the computed checksum 0, which must go out as 0xFFFF.
        var out = [UInt8](repeating: 0, count: 10)
        let header = UDPHeader(sourcePort: 7, destinationPort: 9)
        out.withUnsafeMutableBytes { header.emit(into: $0, source: source, destination: destination) }
        out[8] = out[6]
        out[9] = out[7]
        out.withUnsafeMutableBytes { header.emit(into: $0, source: source, destination: destination) }
        XCTAssertEqual(Array(out[6..<8]), [0xFF, 0xFF])
        try out.withUnsafeBytes { buffer in
            XCTAssertTrue(try UDPDatagram(validating: buffer).verifyChecksum(source: source, destination: destination))
        }
    }

    func testEmitThenParseRoundTripIPv6() throws {
        let source = IPAddress("fd00::1")!, destination = IPAddress("fd00::2")!
        var out = [UInt8](repeating: 0, count: 8) + Array("odd-length payload".utf8)
        let header = UDPHeader(sourcePort: 65535, destinationPort: 1)
        out.withUnsafeMutableBytes { header.emit(into: $0, source: source, destination: destination) }
        try out.withUnsafeBytes { buffer in
            let udp = try UDPDatagram(validating: buffer)
            XCTAssertEqual(UDPHeader(udp), header)
            XCTAssertEqual(udp.length, out.count)
            XCTAssertTrue(udp.verifyChecksum(source: source, destination: destination))
        }
    }
}
