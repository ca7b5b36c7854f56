import XCTest

@testable import SluiceWire

final class UDPPacketTests: XCTestCase {
    private func emit(_ source: String, _ destination: String, _ payload: [UInt8], identification: UInt16 = 0) throws -> [UInt8] {
        let s = SocketEndpoint(source)!, d = SocketEndpoint(destination)!
        var out = [UInt8](repeating: 0xEE, count: UDPPacket.headerLength(for: s.address) + payload.count + 4)
        let length = try payload.withUnsafeBytes { p in
            try out.withUnsafeMutableBytes { try UDPPacket.emit(from: s, to: d, payload: p, identification: identification, into: $0) }
        }
        XCTAssertEqual(length, out.count - 4)
        XCTAssertTrue(out[length...].allSatisfy { $0 == 0xEE }, "wrote past its length")
        return Array(out[0..<length])
    }

    func testFixtures() throws {
        XCTAssertEqual(try emit("93.184.216.34:53", "10.0.0.2:40000", Array("reply!".utf8), identification: 0x0102), Fixture.ipv4UDPReply)
        XCTAssertEqual(try emit("[2001:db8::1]:53", "[fd00::2]:40000", Array("reply!".utf8)), Fixture.ipv6UDPReply)
    }

    func testWithoutDF() throws {
        let s = SocketEndpoint("93.184.216.34:53")!, d = SocketEndpoint("10.0.0.2:40000")!
        var out = [UInt8](repeating: 0, count: 34)
        _ = try Array("reply!".utf8).withUnsafeBytes { p in
            try out.withUnsafeMutableBytes { try UDPPacket.emit(from: s, to: d, payload: p, identification: 0x0102, dontFragment: false, into: $0) }
        }
        var expected = Fixture.ipv4UDPReply
        expected[6] = 0  // DF cleared: the header checksum goes up by 0x4000, 0xf9ec → 0x39ed
        expected[10] = 0x39
        expected[11] = 0xED
        XCTAssertEqual(out, expected)
        XCTAssertTrue(try out.withUnsafeBytes { try IPv4Packet(validating: $0).verifyChecksum() })
    }

    func testHeadersAroundAPayloadInPlace() throws {
        var buffer = [UInt8](repeating: 0, count: 28) + Array("reply!".utf8)
        let length = try buffer.withUnsafeMutableBytes {
            try UDPPacket.emitHeaders(
                from: SocketEndpoint("93.184.216.34:53")!, to: SocketEndpoint("10.0.0.2:40000")!, payloadLength: 6,
                identification: 0x0102, into: $0)
        }
        XCTAssertEqual(length, 34)
        XCTAssertEqual(buffer, Fixture.ipv4UDPReply)
    }

    func testSizes() throws {
        XCTAssertEqual(UDPPacket.maximumIPv4Payload, 65_507)
        XCTAssertEqual(UDPPacket.maximumIPv6Payload, 65_527)
        for (source, destination, maximum) in [("10.0.0.1:1", "10.0.0.2:2", 65_507), ("[fd00::1]:1", "[fd00::2]:2", 65_527)] {
            for length in [0, 1, maximum] {
                let packet = try emit(source, destination, [UInt8](repeating: 0xA5, count: length))
                let s = try packet.withUnsafeBytes { try PacketSummary(parsing: $0, checks: .all) }
                XCTAssertEqual(s.payloadRange.count, length)
                XCTAssertEqual(s.source, SocketEndpoint(source))
                XCTAssertEqual(s.destination, SocketEndpoint(destination))
            }
            assertThrows(.badTotalLength(.udp, maximum + 9)) { try emit(source, destination, [UInt8](repeating: 0, count: maximum + 1)) }
        }
        assertThrows(.addressFamilyMismatch) { try emit("10.0.0.1:1", "[fd00::2]:2", []) }
        var buffer = [UInt8](repeating: 0, count: 64)
        buffer.withUnsafeMutableBytes { b in
            assertThrows(.badTotalLength(.udp, 7)) {
                try UDPPacket.emitHeaders(from: SocketEndpoint("10.0.0.1:1")!, to: SocketEndpoint("10.0.0.2:2")!, payloadLength: -1, into: b)
            }
        }
    }
}
