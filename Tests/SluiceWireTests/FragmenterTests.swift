import XCTest

@testable import SluiceWire

final class FragmenterTests: XCTestCase {
    private func fragments4(_ packet: [UInt8], mtu: Int) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        var scratch = [UInt8](repeating: 0xEE, count: mtu)
        let count = try packet.withUnsafeBytes { p in
            try scratch.withUnsafeMutableBytes { s in
                try IPv4Fragmenter.fragment(p, mtu: mtu, scratch: s) { out.append(Array($0)) }
            }
        }
        XCTAssertEqual(count, out.count)
        return out
    }

    private func fragments6(_ packet: [UInt8], mtu: Int, identification: UInt32 = 0xDEAD_BEEF) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        var scratch = [UInt8](repeating: 0xEE, count: mtu)
        let count = try packet.withUnsafeBytes { p in
            try scratch.withUnsafeMutableBytes { s in
                try IPv6Fragmenter.fragment(p, mtu: mtu, identification: identification, scratch: s) { out.append(Array($0)) }
            }
        }
        XCTAssertEqual(count, out.count)
        return out
    }

    func testIPv4FixtureWithCopiedOptions() throws {
        XCTAssertEqual(
            try fragments4(Fixture.ipv4WithOptions, mtu: 56), [Fixture.ipv4WithOptionsFragment1, Fixture.ipv4WithOptionsFragment2])
    }

    func testIPv6FixtureKeepsHopByHopInFront() throws {
        XCTAssertEqual(
            try fragments6(Fixture.ipv6WithExtensions, mtu: 88),
            [Fixture.ipv6WithExtensionsFragment1, Fixture.ipv6WithExtensionsFragment2])
    }

    func testAPacketThatFitsIsHandedOverUncopied() throws {
        for packet in [Fixture.ipv4UDP, Fixture.ipv6UDP] {
            try (packet + [1, 2, 3]).withUnsafeBytes { p in
                var seen: [UnsafeRawBufferPointer] = []
                var scratch = [UInt8](repeating: 0, count: 8)
                let n = try scratch.withUnsafeMutableBytes { s in
                    packet[0] >> 4 == 4
                        ? try IPv4Fragmenter.fragment(p, mtu: packet.count, scratch: s) { seen.append($0) }
                        : try IPv6Fragmenter.fragment(p, mtu: packet.count, identification: 1, scratch: s) { seen.append($0) }
                }
                XCTAssertEqual(n, 1)
                XCTAssertEqual(seen.first?.baseAddress, p.baseAddress)
                XCTAssertEqual(seen.first?.count, packet.count, "cut to the packet's own length")
            }
        }
    }

    /// Every MTU from the smallest that works up to the packet's size: each fragment is valid, fits,
    /// and the pieces put back together give the original data.
    func testIPv4EveryMTU() throws {
        let packet = udpPacket(source: "10.0.0.1", destination: "10.0.0.2", payload: 300, identification: 0x7777)
        let data = Array(packet[20...])
        for mtu in 28..<packet.count + 2 {
            let pieces = try fragments4(packet, mtu: mtu)
            var rebuilt: [UInt8] = []
            for (i, piece) in pieces.enumerated() {
                XCTAssertLessThanOrEqual(piece.count, mtu)
                try piece.withUnsafeBytes { b in
                    let ip = try IPv4Packet(validating: b)
                    XCTAssertEqual(ip.bytes.count, piece.count)
                    XCTAssertTrue(ip.verifyChecksum())
                    XCTAssertEqual(ip.identification, 0x7777)
                    XCTAssertEqual(ip.fragmentOffset, rebuilt.count, "mtu \(mtu)")
                    XCTAssertEqual(ip.moreFragments, i < pieces.count - 1)
                    XCTAssertEqual(ip.dontFragment, pieces.count == 1, "DF cleared in fragments only")
                    if ip.moreFragments { XCTAssertEqual(ip.payload.count % 8, 0) }
                    rebuilt += Array(ip.payload)
                }
            }
            XCTAssertEqual(rebuilt, data, "mtu \(mtu)")
        }
        assertThrows(.mtuTooSmall(27)) { try fragments4(packet, mtu: 27) }
        assertThrows(.mtuTooSmall(39)) { try fragments4(Fixture.ipv4WithOptions, mtu: 39) }  // 32-byte header
        XCTAssertEqual(try fragments4(Fixture.ipv4WithOptions, mtu: 40).count, 4)  // 8, then 16, 16, 8 (24-byte headers)
    }

    func testIPv4FragmentOfAFragment() throws {
        // Fragment 1 of the fixture again (32-byte header, 24 bytes): pieces of 8 and 16, both with
        // MF; fragment 2 (24-byte header, offset 24, last): pieces at 24 and 40, the last without MF.
        let first = try fragments4(Fixture.ipv4WithOptionsFragment1, mtu: 40)
        XCTAssertEqual(first.count, 2)
        let second = try fragments4(Fixture.ipv4WithOptionsFragment2, mtu: 40)
        XCTAssertEqual(second.count, 2)
        var offsets: [Int] = []
        var more: [Bool] = []
        for piece in first + second {
            try piece.withUnsafeBytes { b in
                let ip = try IPv4Packet(validating: b)
                offsets.append(ip.fragmentOffset)
                more.append(ip.moreFragments)
            }
        }
        XCTAssertEqual(offsets, [0, 8, 24, 40])
        XCTAssertEqual(more, [true, true, true, false])
    }

    func testIPv6EveryMTU() throws {
        let packet = Fixture.ipv6WithExtensions + []
        let fragmentable = Array(packet[48...])
        for mtu in 64..<packet.count + 2 {
            let pieces = try fragments6(packet, mtu: mtu, identification: UInt32(mtu))
            if pieces.count == 1 {
                XCTAssertEqual(pieces[0], packet)
                continue
            }
            var rebuilt: [UInt8] = []
            for (i, piece) in pieces.enumerated() {
                XCTAssertLessThanOrEqual(piece.count, mtu)
                try piece.withUnsafeBytes { b in
                    let ip = try IPv6Packet(validating: b)
                    XCTAssertEqual(ip.bytes.count, piece.count)
                    XCTAssertEqual(ip.nextHeader, .hopByHop)
                    XCTAssertEqual(ip.fragment?.identification, UInt32(mtu))
                    XCTAssertEqual(ip.fragment?.offset, rebuilt.count)
                    XCTAssertEqual(ip.fragment?.moreFragments, i < pieces.count - 1)
                    XCTAssertEqual(ip.fragmentHeaderOffset, 48)
                    XCTAssertEqual(b[48], 60, "the fragment header names the destination options")
                    rebuilt += Array(b[56...])
                }
            }
            XCTAssertEqual(rebuilt, fragmentable, "mtu \(mtu)")
        }
        assertThrows(.mtuTooSmall(63)) { try fragments6(packet, mtu: 63) }
        assertThrows(.badExtensionHeader(.fragment)) { try fragments6(Fixture.ipv6WithExtensionsFragment1, mtu: 64) }
        assertThrows(.badExtensionHeader(.fragment)) { try fragments6(Fixture.ipv6HopByHopFragment, mtu: 1280) }
    }

    func testIPv6UnfragmentablePart() {
        // (headers after the fixed one, expected length, expected next-header field)
        let hbh: (UInt8, [UInt8]) = (0, [0, 0, 1, 4, 0, 0, 0, 0])
        let dst: (UInt8, [UInt8]) = (60, [0, 0, 1, 4, 0, 0, 0, 0])
        let rt: (UInt8, [UInt8]) = (43, [0, 1, 4, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 8))  // 16 bytes
        let cases: [([(UInt8, [UInt8])], Int, Int)] = [
            ([], 40, 6),
            ([hbh], 48, 40),
            ([dst], 40, 6),
            ([hbh, dst], 48, 40),
            ([hbh, dst, rt], 72, 56),
            ([dst, rt, dst], 64, 48),
            ([rt], 56, 40),
        ]
        for (headers, length, field) in cases {
            var packet = [UInt8](repeating: 0, count: 40)
            packet[0] = 0x60
            packet[6] = headers.first?.0 ?? 17
            for (i, h) in headers.enumerated() {
                var bytes = h.1
                bytes[0] = i + 1 < headers.count ? headers[i + 1].0 : 17
                packet += bytes
            }
            packet += [0, 1, 0, 2, 0, 8, 0, 0]
            let payload = packet.count - 40
            packet[4] = UInt8(payload >> 8)
            packet[5] = UInt8(payload & 0xFF)
            packet.withUnsafeBytes { b in
                XCTAssertNotNil(try? IPv6Packet(validating: b))
                let (l, f) = IPv6Fragmenter.unfragmentablePart(b)
                XCTAssertEqual(l, length, "\(headers.map(\.0))")
                XCTAssertEqual(f, field, "\(headers.map(\.0))")
            }
        }
    }

    func testTruncatedPacketsNeverTrap() {
        for packet in [Fixture.ipv4WithOptions, Fixture.ipv6WithExtensions] {
            for length in 0..<packet.count {
                let cut = Array(packet[0..<length])
                assertThrowsAny("at \(length)") {
                    packet[0] >> 4 == 4 ? try fragments4(cut, mtu: 48) : try fragments6(cut, mtu: 64)
                }
            }
        }
    }

    private func udpPacket(source: String, destination: String, payload: Int, identification: UInt16) -> [UInt8] {
        let s = SocketEndpoint(address: IPAddress(source)!, port: 1), d = SocketEndpoint(address: IPAddress(destination)!, port: 2)
        let bytes = (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var out = [UInt8](repeating: 0, count: UDPPacket.headerLength(for: s.address) + payload)
        _ = bytes.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { try! UDPPacket.emit(from: s, to: d, payload: p, identification: identification, into: $0) }
        }
        return out
    }
}
