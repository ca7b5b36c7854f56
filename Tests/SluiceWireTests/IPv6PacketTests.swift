import SluiceTestSupport
import XCTest

@testable import SluiceWire

final class IPv6PacketTests: XCTestCase {
    func testDecodeSynFixture() throws {
        try Fixture.ipv6TCPSyn.withUnsafeBytes { buffer in
            let ip = try IPv6Packet(validating: buffer)
            XCTAssertEqual(ip.version, 6)
            XCTAssertEqual(ip.trafficClass, 0)
            XCTAssertEqual(ip.flowLabel, 0x12345)
            XCTAssertEqual(ip.payloadLength, 28)
            XCTAssertEqual(ip.nextHeader, .tcp)
            XCTAssertEqual(ip.hopLimit, 64)
            XCTAssertEqual(ip.source, IPAddress("fd00::2"))
            XCTAssertEqual(ip.destination, IPAddress("2001:db8::1"))
            XCTAssertEqual(ip.transportProtocol, .tcp)
            XCTAssertEqual(ip.transportOffset, 40)
            XCTAssertEqual(ip.payloadRange, 40..<68)
            XCTAssertEqual(ip.transportRange, 40..<68)
            XCTAssertNil(ip.fragment)
            XCTAssertFalse(ip.isFragment)
            XCTAssertNil(ip.fragmentHeaderOffset)
        }
    }

    func testDecodeHopByHopAndFragmentHeaders() throws {
        try Fixture.ipv6HopByHopFragment.withUnsafeBytes { buffer in
            let ip = try IPv6Packet(validating: buffer)
            XCTAssertEqual(ip.nextHeader, .hopByHop)
            XCTAssertEqual(ip.hopLimit, 1)
            XCTAssertEqual(ip.payloadLength, 40)
            XCTAssertEqual(ip.source, IPAddress("fe80::1"))
            XCTAssertEqual(ip.destination, IPAddress("ff02::16"))
            XCTAssertEqual(ip.transportProtocol, .udp)
            XCTAssertEqual(ip.transportOffset, 56)
            XCTAssertEqual(ip.transportRange, 56..<80)
            XCTAssertEqual(ip.fragment, IPv6Packet.Fragment(offset: 0, moreFragments: true, identification: 0xCAFE_0001))
            XCTAssertTrue(ip.isFragment)
            XCTAssertEqual(ip.fragmentHeaderOffset, 48)
            XCTAssertEqual(ip.fragmentLinkOffset, 40, "the hop-by-hop header names the fragment header")
            // The first fragment carries the whole UDP header; its checksum covers the datagram.
            let udp = try UDPDatagram(validating: ip.transport)
            XCTAssertEqual(udp.sourcePort, 1000)
            XCTAssertEqual(udp.destinationPort, 2000)
            XCTAssertTrue(udp.verifyChecksum(source: ip.source, destination: ip.destination))
        }
    }

    func testDecodeLaterFragmentStopsTheWalk() throws {
        try Fixture.ipv6LaterFragment.withUnsafeBytes { buffer in
            let ip = try IPv6Packet(validating: buffer)
            XCTAssertEqual(ip.nextHeader, .fragment)
            XCTAssertEqual(ip.fragment, IPv6Packet.Fragment(offset: 16, moreFragments: false, identification: 0xCAFE_0001))
            XCTAssertTrue(ip.isFragment)
            XCTAssertEqual(ip.fragmentHeaderOffset, 40)
            XCTAssertEqual(ip.fragmentLinkOffset, 6, "the fixed header names the fragment header")
            XCTAssertEqual(ip.transportProtocol, .udp)
            XCTAssertEqual(ip.transportOffset, 48)
            XCTAssertEqual(Array(ip.transport), Array("tail end".utf8))
        }
    }

    func testAtomicFragmentIsNotAFragment() throws {
        var bytes = Fixture.ipv6LaterFragment
        bytes[42] = 0  // offset 0, M clear
        bytes[43] = 0
        try bytes.withUnsafeBytes { buffer in
            let ip = try IPv6Packet(validating: buffer)
            XCTAssertEqual(ip.fragment?.isAtomic, true)
            XCTAssertFalse(ip.isFragment)
        }
    }

    func testRoutingAndDestinationOptionsAreWalked() throws {
        // Fixed header → routing (16 bytes) → destination options (8 bytes) → TCP (20 bytes).
        let routing = hex("3c01000000000000 0000000000000000")
        let destinationOptions = hex("0600010400000000")
        let tcp = hex("0001000200000000000000005000000000000000")
        let payload = routing + destinationOptions + tcp
        var bytes = [UInt8](repeating: 0, count: 40) + payload
        bytes.withUnsafeMutableBytes {
            IPv6Header(
                source: IPAddress("2001:db8::a")!, destination: IPAddress("2001:db8::b")!,
                nextHeader: .routing, payloadLength: payload.count
            ).emit(into: $0)
        }
        try bytes.withUnsafeBytes { buffer in
            let ip = try IPv6Packet(validating: buffer)
            XCTAssertEqual(ip.transportProtocol, .tcp)
            XCTAssertEqual(ip.transportOffset, 64)
            XCTAssertEqual(try TCPSegment(validating: ip.transport).destinationPort, 2)
        }
    }

    func testTruncatedAtEveryLengthThrows() {
        for fixture in [Fixture.ipv6TCPSyn, Fixture.ipv6HopByHopFragment, Fixture.ipv6LaterFragment] {
            for length in 0..<fixture.count {
                fixture.withUnsafeBytes { buffer in
                    assertThrowsAny("at length \(length)") {
                        try IPv6Packet(validating: UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
                    }
                }
            }
        }
    }

    func testImpossibleHeaders() {
        // (name, fixture, edits, expected)
        let cases: [(String, [UInt8], [(Int, UInt8)], WireError)] = [
            ("version 4", Fixture.ipv6TCPSyn, [(0, 0x40)], .badVersion(4)),
            ("payload length 29 > buffer", Fixture.ipv6TCPSyn, [(5, 29)], .badTotalLength(.ipv6, 69)),
            (
                "hop-by-hop length past the packet", Fixture.ipv6HopByHopFragment, [(41, 9)],
                .truncated(.ipv6ExtensionHeader)
            ),
            (
                "hop-by-hop after the fragment header", Fixture.ipv6HopByHopFragment, [(48, 0)],
                .badExtensionHeader(.hopByHop)
            ),
            (
                "two fragment headers", Fixture.ipv6HopByHopFragment, [(40, 44), (48, 44)],
                .badExtensionHeader(.fragment)
            ),
            (
                "extension header cut by the payload length", Fixture.ipv6HopByHopFragment, [(5, 12)],
                .truncated(.ipv6ExtensionHeader)
            ),
        ]
        for (name, fixture, edits, expected) in cases {
            var bytes = fixture
            for (index, value) in edits { bytes[index] = value }
            bytes.withUnsafeBytes { buffer in
                assertThrows(expected) { _ = try IPv6Packet(validating: buffer) }
            }
            _ = name
        }
    }

    func testEmitReproducesFixtureHeaders() throws {
        for fixture in [Fixture.ipv6TCPSyn, Fixture.ipv6HopByHopFragment, Fixture.ipv6LaterFragment] {
            let header = try fixture.withUnsafeBytes { buffer in IPv6Header(try IPv6Packet(validating: buffer)) }
            var out = [UInt8](repeating: 0xEE, count: IPv6Header.length)
            out.withUnsafeMutableBytes { header.emit(into: $0) }
            XCTAssertEqual(out, Array(fixture[0..<40]))
        }
    }

    func testEmitThenParseRoundTrip() throws {
        let header = IPv6Header(
            source: IPAddress("2001:db8:1:2:3:4:5:6")!, destination: IPAddress("::1")!, nextHeader: .udp,
            payloadLength: 8, hopLimit: 255, trafficClass: 0xB8, flowLabel: 0xF_FFFF)
        var out = [UInt8](repeating: 0, count: 48)
        out.withUnsafeMutableBytes { header.emit(into: $0) }
        try out.withUnsafeBytes { buffer in
            XCTAssertEqual(IPv6Header(try IPv6Packet(validating: buffer)), header)
        }
    }
}
