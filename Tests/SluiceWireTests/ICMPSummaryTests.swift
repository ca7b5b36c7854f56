import XCTest

@testable import SluiceWire

final class ICMPSummaryTests: XCTestCase {
    private func summary(_ bytes: [UInt8], checks: PacketSummary.Checks = .all) throws -> ICMPSummary {
        try bytes.withUnsafeBytes { try ICMPSummary(parsing: $0, checks: checks) }
    }

    func testFixtures() throws {
        let cases: [(String, [UInt8], ICMPSummary.Kind, String, String, Int)] = [
            ("v4 request", Fixture.ipv4EchoRequest, .echoRequest(identifier: 0x1234, sequenceNumber: 1), "10.0.0.2", "93.184.216.34", 20),
            ("v4 reply", Fixture.ipv4EchoReply, .echoReply(identifier: 0x1234, sequenceNumber: 1), "93.184.216.34", "10.0.0.2", 20),
            ("v6 request", Fixture.ipv6EchoRequest, .echoRequest(identifier: 0xABCD, sequenceNumber: 7), "fd00::2", "2001:db8::1", 48),
            ("v6 reply", Fixture.ipv6EchoReply, .echoReply(identifier: 0xABCD, sequenceNumber: 7), "2001:db8::1", "fd00::2", 40),
            ("v4 port unreachable", Fixture.ipv4PortUnreachable, .error, "8.8.8.8", "192.168.1.10", 20),
            ("v6 too big", Fixture.ipv6PacketTooBig, .error, "2001:db8::1", "fd00::2", 40),
        ]
        for (name, packet, kind, source, destination, offset) in cases {
            for checks in [PacketSummary.Checks(), .all] {
                let s = try summary(packet, checks: checks)
                XCTAssertEqual(s.kind, kind, name)
                XCTAssertEqual(s.source, IPAddress(source), name)
                XCTAssertEqual(s.destination, IPAddress(destination), name)
                XCTAssertEqual(s.messageOffset, offset, name)
                XCTAssertEqual(s.length, packet.count, name)
                XCTAssertEqual(s.isEchoRequest, name.hasSuffix("request"), name)
            }
        }
        XCTAssertEqual(try summary(Fixture.ipv4PortUnreachable).type, 3)
        XCTAssertEqual(try summary(Fixture.ipv4PortUnreachable).code, 3)
    }

    func testOtherKinds() throws {
        var timestamp = Fixture.ipv4EchoRequest
        timestamp[20] = 13  // timestamp request: not an error, not an echo
        XCTAssertEqual(try summary(timestamp, checks: []).kind, .other)
        var code1 = Fixture.ipv4EchoRequest
        code1[21] = 1  // an echo request with a non-zero code is not one
        XCTAssertEqual(try summary(code1, checks: []).kind, .other)
        var neighbour = Fixture.ipv6EchoReply
        neighbour[40] = 135  // neighbour solicitation
        XCTAssertEqual(try summary(neighbour, checks: []).kind, .other)
    }

    func testDropReasons() {
        var badIP = Fixture.ipv4EchoRequest
        badIP[10] ^= 1
        var badICMP = Fixture.ipv4EchoRequest
        badICMP[38] ^= 1
        var badICMPv6 = Fixture.ipv6EchoRequest
        badICMPv6[8] ^= 1  // the source: the pseudo-header changes
        var v4Fragment = Fixture.ipv4EchoRequest
        v4Fragment[6] = 0x20  // MF
        var icmpInIPv6 = Fixture.ipv6EchoReply
        icmpInIPv6[6] = 1
        var icmpv6InIPv4 = Fixture.ipv4EchoRequest
        icmpv6InIPv4[9] = 58
        var shortICMP = Array(Fixture.ipv4EchoRequest[0..<27])
        shortICMP[3] = 27
        let cases: [(String, [UInt8], PacketSummary.Checks, WireError)] = [
            ("empty", [], .all, .truncated(.ip)),
            ("version 7", [0x70], .all, .badVersion(7)),
            ("IPv4 header checksum", badIP, .ipv4Header, .badChecksum(.ipv4)),
            ("ICMP checksum", badICMP, .transport, .badChecksum(.icmp)),
            ("ICMPv6 checksum", badICMPv6, .transport, .badChecksum(.icmpv6)),
            ("IPv4 fragment", v4Fragment, [], .fragment),
            ("IPv6 fragment", Fixture.ipv6LaterFragment, [], .fragment),
            ("UDP", Fixture.ipv4UDP, .all, .unsupportedProtocol(.udp)),
            ("TCP over IPv6", Fixture.ipv6TCPSyn, .all, .unsupportedProtocol(.tcp)),
            ("ICMP in IPv6", icmpInIPv6, [], .unsupportedProtocol(.icmp)),
            ("ICMPv6 in IPv4", icmpv6InIPv4, [], .unsupportedProtocol(.icmpv6)),
            ("7-byte ICMP", shortICMP, [], .truncated(.icmp)),
        ]
        for (name, packet, checks, expected) in cases {
            assertThrows(expected, name) { try summary(packet, checks: checks) }
        }
    }

    func testTruncatedAtEveryLength() {
        for packet in [Fixture.ipv4EchoRequest, Fixture.ipv6EchoRequest, Fixture.ipv6PacketTooBig] {
            for length in 0..<packet.count {
                assertThrowsAny("at \(length)") { try summary(Array(packet[0..<length]), checks: []) }
            }
        }
    }
}
