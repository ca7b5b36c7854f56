import SluiceTestSupport
import XCTest

@testable import SluiceWire

final class PacketSummaryTests: XCTestCase {
    private func summary(_ bytes: [UInt8], checks: PacketSummary.Checks = .ipv4Header) throws -> PacketSummary {
        try bytes.withUnsafeBytes { buffer in try PacketSummary(parsing: buffer, checks: checks) }
    }

    private func endpoint(_ text: String) -> SocketEndpoint { SocketEndpoint(text)! }

    func testFixtures() throws {
        // (name, packet, protocol, source, destination, flags, transport offset, payload range)
        let cases: [(String, [UInt8], IPProtocol, String, String, TCPFlags, Int, Range<Int>)] = [
            ("v4 SYN", Fixture.ipv4TCPSyn, .tcp, "10.0.0.2:54321", "93.184.216.34:443", .syn, 20, 60..<60),
            ("v6 SYN", Fixture.ipv6TCPSyn, .tcp, "[fd00::2]:40000", "[2001:db8::1]:80", .syn, 40, 68..<68),
            ("v4 UDP", Fixture.ipv4UDP, .udp, "192.168.1.10:5353", "8.8.8.8:53", [], 20, 28..<57),
            ("v4 data", Fixture.ipv4TCPData, .tcp, "172.16.0.5:8080", "172.16.0.9:50000", [.psh, .ack], 20, 40..<52),
        ]
        for (name, packet, proto, source, destination, flags, offset, payload) in cases {
            for checks in [PacketSummary.Checks(), .ipv4Header, .all] {
                let s = try summary(packet, checks: checks)
                XCTAssertEqual(s.protocol, proto, name)
                XCTAssertEqual(s.source, endpoint(source), name)
                XCTAssertEqual(s.destination, endpoint(destination), name)
                XCTAssertEqual(s.tcpFlags, flags, name)
                XCTAssertEqual(s.transportOffset, offset, name)
                XCTAssertEqual(s.payloadRange, payload, name)
                XCTAssertEqual(s.length, packet.count, name)
            }
        }
    }

    func testTrailingBytesAreNotPartOfThePacket() throws {
        let s = try summary(Fixture.ipv4UDP + [1, 2, 3])
        XCTAssertEqual(s.length, Fixture.ipv4UDP.count)
        XCTAssertEqual(s.payloadRange, 28..<57)
    }

    func testDropReasons() {
        var badIPChecksum = Fixture.ipv4TCPSyn
        badIPChecksum[10] ^= 1
        var badTCPChecksum = Fixture.ipv4TCPData
        badTCPChecksum[51] ^= 1
        var badUDPChecksum = Fixture.ipv4UDP
        badUDPChecksum[56] ^= 1
        var badV6TCPChecksum = Fixture.ipv6TCPSyn
        badV6TCPChecksum[8] ^= 1  // the source address: the pseudo-header changes
        var icmp = Fixture.ipv4UDP
        icmp[9] = 1
        var badDataOffset = Fixture.ipv4TCPData
        badDataOffset[32] = 0x40
        var badUDPLength = Fixture.ipv4UDP
        badUDPLength[25] = 38
        var zeroV6UDPChecksum = Fixture.ipv6HopByHopFragment
        zeroV6UDPChecksum[5] = 0x20  // cut to hop-by-hop + UDP: drop the fragment header
        zeroV6UDPChecksum[40] = 17
        zeroV6UDPChecksum.removeSubrange(48..<56)
        zeroV6UDPChecksum[54] = 0
        zeroV6UDPChecksum[55] = 0

        let cases: [(String, [UInt8], PacketSummary.Checks, WireError)] = [
            ("empty", [], .all, .truncated(.ip)),
            ("version 5", [0x50] + Array(repeating: 0, count: 39), .all, .badVersion(5)),
            ("version 0", [0x00], .all, .badVersion(0)),
            ("IPv4 header cut", Array(Fixture.ipv4TCPSyn[0..<19]), .all, .truncated(.ipv4)),
            ("IPv6 header cut", Array(Fixture.ipv6TCPSyn[0..<39]), .all, .truncated(.ipv6)),
            ("IPv4 header checksum", badIPChecksum, .ipv4Header, .badChecksum(.ipv4)),
            ("TCP checksum", badTCPChecksum, .all, .badChecksum(.tcp)),
            ("UDP checksum", badUDPChecksum, .transport, .badChecksum(.udp)),
            ("TCP checksum over IPv6", badV6TCPChecksum, .transport, .badChecksum(.tcp)),
            ("zero UDP checksum over IPv6", zeroV6UDPChecksum, .transport, .badChecksum(.udp)),
            ("ICMP", icmp, [], .unsupportedProtocol(.icmp)),
            ("IPv4 fragment", Fixture.ipv4Fragment, .all, .fragment),
            ("IPv6 first fragment", Fixture.ipv6HopByHopFragment, .all, .fragment),
            ("IPv6 later fragment", Fixture.ipv6LaterFragment, .all, .fragment),
            ("TCP data offset 4", badDataOffset, [], .badHeaderLength(.tcp, 16)),
            ("UDP length past the packet", badUDPLength, [], .badTotalLength(.udp, 38)),
            ("TCP header cut", Array(Fixture.ipv4TCPData[0..<39]), [], .badTotalLength(.ipv4, 52)),
        ]
        for (name, packet, checks, expected) in cases {
            do {
                let s = try summary(packet, checks: checks)
                XCTFail("\(name): expected \(expected), got \(s)")
            } catch {
                XCTAssertEqual(error as? WireError, expected, name)
            }
        }
        // Without the check asked for, a bad checksum passes.
        XCTAssertNotNil(try? summary(badIPChecksum, checks: []))
        XCTAssertNotNil(try? summary(badTCPChecksum, checks: .ipv4Header))
        // The zero UDP checksum case is otherwise a well-formed IPv6 UDP packet.
        XCTAssertEqual(try? summary(zeroV6UDPChecksum, checks: []).destination, endpoint("[ff02::16]:2000"))
    }

    func testTruncatedAtEveryLengthThrows() {
        let fixtures = [
            Fixture.ipv4TCPSyn, Fixture.ipv6TCPSyn, Fixture.ipv4UDP, Fixture.ipv4TCPData,
            Fixture.ipv6HopByHopFragment,
        ]
        for fixture in fixtures {
            for length in 0..<fixture.count {
                assertThrowsAny("at length \(length)") {
                    try summary(Array(fixture[0..<length]), checks: .all)
                }
            }
        }
    }

    func testErrorsReadAsSentences() {
        XCTAssertEqual(WireError.unsupportedProtocol(.icmp).description, "unsupported transport protocol ICMP(1)")
        XCTAssertEqual(
            WireError.badHeaderLength(.tcp, 16).description,
            "bad TCP header length 16 bytes: below the minimum or past the end of the packet")
    }

    /// Random bytes and randomly mutated fixtures: any answer is fine, a trap is not. (The libFuzzer
    /// target in Fuzz/ does the same at scale.)
    func testArbitraryBytesNeverTrap() {
        var rng = SplitMix64(seed: 791)
        let fixtures = [
            Fixture.ipv4TCPSyn, Fixture.ipv6TCPSyn, Fixture.ipv4UDP, Fixture.ipv6HopByHopFragment,
            Fixture.ipv6LaterFragment, Fixture.ipv4TCPData,
        ]
        var accepted = 0
        var rst = [UInt8](repeating: 0, count: TCPReset.maximumLength)
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 4 == 0 {
                bytes = (0..<Int.random(in: 0...80, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                if !bytes.isEmpty { bytes[0] = [0x45, 0x46, 0x4F, 0x60][round / 4 % 4] }
            } else {
                bytes = fixtures[round % fixtures.count]
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
                bytes.removeLast(Int.random(in: 0...3, using: &rng))
            }
            if (try? summary(bytes, checks: .all)) != nil { accepted += 1 }
            bytes.withUnsafeBytes { packet in
                rst.withUnsafeMutableBytes { out in _ = try? TCPReset.emit(answering: packet, into: out) }
            }
        }
        XCTAssertGreaterThan(accepted, 0)
    }
}
