import XCTest

@testable import SluiceWire

final class ICMPErrorMessageTests: XCTestCase {
    private func error(
        _ kind: ICMPErrorMessage.Kind, about packet: [UInt8], from source: String
    ) throws -> [UInt8] {
        var out = [UInt8](repeating: 0xEE, count: ICMPErrorMessage.maximumLength + 8)
        let length = try packet.withUnsafeBytes { p in
            try out.withUnsafeMutableBytes { o in
                try ICMPErrorMessage.emit(kind, about: p, from: IPAddress(source)!, into: o)
            }
        }
        XCTAssertTrue(out[length...].allSatisfy { $0 == 0xEE }, "wrote past its length")
        return Array(out[0..<length])
    }

    private func rebuilt(
        _ kind: ICMPErrorMessage.Kind, from application: String, to remote: String, payloadLength: Int, source: String
    ) throws -> [UInt8] {
        var out = [UInt8](repeating: 0xEE, count: ICMPErrorMessage.maximumLength)
        let length = try out.withUnsafeMutableBytes { o in
            try ICMPErrorMessage.emit(
                kind, aboutUDPFrom: SocketEndpoint(application)!, to: SocketEndpoint(remote)!,
                payloadLength: payloadLength, from: IPAddress(source)!, into: o)
        }
        return Array(out[0..<length])
    }

    func testFixtures() throws {
        XCTAssertEqual(try error(.portUnreachable, about: Fixture.ipv4UDP, from: "8.8.8.8"), Fixture.ipv4PortUnreachable)
        XCTAssertEqual(try error(.tooBig(mtu: 1400), about: Fixture.ipv4UDP, from: "8.8.8.8"), Fixture.ipv4FragmentationNeeded)
        XCTAssertEqual(try error(.portUnreachable, about: Fixture.ipv6UDP, from: "2001:db8::1"), Fixture.ipv6PortUnreachable)
        XCTAssertEqual(try error(.tooBig(mtu: 1280), about: Fixture.ipv6UDP, from: "2001:db8::1"), Fixture.ipv6PacketTooBig)
        XCTAssertEqual(
            try rebuilt(.hostUnreachable, from: "10.0.0.2:5000", to: "1.1.1.1:53", payloadLength: 100, source: "1.1.1.1"),
            Fixture.ipv4HostUnreachableRebuilt)
        XCTAssertEqual(
            try rebuilt(.hostUnreachable, from: "[fd00::2]:5000", to: "[2001:db8::53]:53", payloadLength: 100, source: "2001:db8::53"),
            Fixture.ipv6AddressUnreachableRebuilt)
    }

    func testEveryKindParsesBackWithGoodChecksums() throws {
        let kinds: [(ICMPErrorMessage.Kind, UInt8, UInt8, UInt8, UInt8, UInt32)] = [
            // kind, v4 type/code, v6 type/code, rest
            (.portUnreachable, 3, 3, 1, 4, 0),
            (.hostUnreachable, 3, 1, 1, 3, 0),
            (.tooBig(mtu: 576), 3, 4, 2, 0, 576),
            (.administrativelyProhibited, 3, 13, 1, 1, 0),
        ]
        for (kind, t4, c4, t6, c6, rest) in kinds {
            for (packet, source, type, code) in [
                (Fixture.ipv4TCPSyn, "93.184.216.34", t4, c4), (Fixture.ipv6TCPSyn, "2001:db8::1", t6, c6),
            ] {
                let out = try error(kind, about: packet, from: source)
                let s = try out.withUnsafeBytes { try ICMPSummary(parsing: $0, checks: .all) }
                XCTAssertEqual(s.kind, .error)
                XCTAssertEqual(s.type, type)
                XCTAssertEqual(s.code, code)
                XCTAssertEqual(s.source, IPAddress(source))
                XCTAssertEqual(Array(out[(s.messageOffset + 8)...]), packet, "quoted whole")
                let restBytes = out[(s.messageOffset + 4)..<(s.messageOffset + 8)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                XCTAssertEqual(restBytes, rest)
            }
        }
    }

    func testQuoteIsCutToTheSizeLimits() throws {
        // A 1,000-byte IPv4 UDP packet: the error is 576 bytes, quoting 548.
        let v4 = udpPacket(source: "10.0.0.2", destination: "10.0.0.3", payload: 1000 - 28)
        let e4 = try error(.portUnreachable, about: v4, from: "10.0.0.3")
        XCTAssertEqual(e4.count, 576)
        XCTAssertEqual(Array(e4[28...]), Array(v4[0..<548]))
        XCTAssertNoThrow(try e4.withUnsafeBytes { try ICMPSummary(parsing: $0, checks: .all) })
        // A 1,500-byte IPv6 one: 1280, quoting 1232.
        let v6 = udpPacket(source: "fd00::2", destination: "fd00::3", payload: 1500 - 48)
        let e6 = try error(.tooBig(mtu: 1280), about: v6, from: "fd00::3")
        XCTAssertEqual(e6.count, 1280)
        XCTAssertEqual(Array(e6[48...]), Array(v6[0..<1232]))
        XCTAssertNoThrow(try e6.withUnsafeBytes { try ICMPSummary(parsing: $0, checks: .all) })
        // Bytes past the IP total length are not quoted.
        XCTAssertEqual(try error(.portUnreachable, about: Fixture.ipv4UDP + [9, 9], from: "8.8.8.8"), Fixture.ipv4PortUnreachable)
    }

    func testRebuiltQuoteClampsThePayloadLength() throws {
        let v4 = try rebuilt(.portUnreachable, from: "10.0.0.2:1", to: "10.0.0.3:2", payloadLength: 1 << 20, source: "10.0.0.3")
        XCTAssertEqual(Array(v4[30..<32]), [0xFF, 0xFF], "quoted IPv4 total length")
        XCTAssertEqual(Array(v4[52..<54]), [0xFF, 0xEB], "quoted UDP length 65515")
        let v6 = try rebuilt(.portUnreachable, from: "[fd00::2]:1", to: "[fd00::3]:2", payloadLength: -5, source: "fd00::3")
        XCTAssertEqual(Array(v6[52..<54]), [0, 8], "quoted payload length")
        XCTAssertEqual(Array(v6[92..<94]), [0, 8], "quoted UDP length")
    }

    func testRules() throws {
        let laterFragment = Fixture.ipv4Fragment  // offset 24
        var firstFragment = Fixture.ipv4UDP
        firstFragment[6] = 0x20  // MF, offset 0: a first fragment may be answered
        var toMulticast = Fixture.ipv4UDP
        toMulticast[16] = 224
        var toBroadcast = Fixture.ipv4UDP
        for i in 16..<20 { toBroadcast[i] = 255 }
        var fromClassE = Fixture.ipv4UDP
        fromClassE[12] = 240
        var v6ToMulticast = Fixture.ipv6UDP
        v6ToMulticast[24] = 0xFF
        var v6FromMulticast = Fixture.ipv6UDP
        v6FromMulticast[8] = 0xFF

        let cases: [(String, [UInt8], String, ICMPErrorMessage.Kind, WireError?)] = [
            ("about an ICMP error", Fixture.ipv4PortUnreachable, "192.168.1.10", .portUnreachable, .notAnswered(.icmpError)),
            ("about an ICMPv6 error", Fixture.ipv6PacketTooBig, "fd00::2", .portUnreachable, .notAnswered(.icmpError)),
            ("about an echo request", Fixture.ipv4EchoRequest, "93.184.216.34", .hostUnreachable, nil),
            ("about an ICMPv6 echo", Fixture.ipv6EchoRequest, "2001:db8::1", .hostUnreachable, nil),
            ("about a later fragment", laterFragment, "10.2.2.2", .portUnreachable, .notAnswered(.laterFragment)),
            ("about a first fragment", firstFragment, "8.8.8.8", .portUnreachable, nil),
            ("about an IPv6 later fragment", Fixture.ipv6LaterFragment, "2001:db8::3", .portUnreachable, nil),
            ("to multicast", toMulticast, "8.8.8.8", .portUnreachable, .notAnswered(.multicastOrBroadcast)),
            ("to broadcast", toBroadcast, "8.8.8.8", .hostUnreachable, .notAnswered(.multicastOrBroadcast)),
            ("too big to IPv4 multicast", toMulticast, "8.8.8.8", .tooBig(mtu: 1400), .notAnswered(.multicastOrBroadcast)),
            ("from class E", fromClassE, "8.8.8.8", .portUnreachable, .notAnswered(.sourceNotUnicast)),
            ("v6 to multicast", v6ToMulticast, "2001:db8::1", .portUnreachable, .notAnswered(.multicastOrBroadcast)),
            ("v6 too big to multicast", v6ToMulticast, "2001:db8::1", .tooBig(mtu: 1280), nil),
            ("v6 from multicast", v6FromMulticast, "2001:db8::1", .tooBig(mtu: 1280), .notAnswered(.sourceNotUnicast)),
            ("v4 packet, v6 source", Fixture.ipv4UDP, "2001:db8::1", .portUnreachable, .addressFamilyMismatch),
            ("v6 packet, v4 source", Fixture.ipv6UDP, "8.8.8.8", .portUnreachable, .addressFamilyMismatch),
            ("empty", [], "8.8.8.8", .portUnreachable, .truncated(.ip)),
        ]
        for (name, packet, source, kind, expected) in cases {
            if let expected {
                assertThrows(expected, name) { try error(kind, about: packet, from: source) }
            } else {
                XCTAssertNoThrow(try error(kind, about: packet, from: source), name)
            }
        }
        let mixed = [("10.0.0.2:1", "[fd00::1]:2", "10.0.0.1"), ("10.0.0.2:1", "10.0.0.3:2", "fd00::1")]
        for (a, r, s) in mixed {
            assertThrows(.addressFamilyMismatch) { try rebuilt(.portUnreachable, from: a, to: r, payloadLength: 0, source: s) }
        }
        assertThrows(.notAnswered(.sourceNotUnicast)) {
            try rebuilt(.portUnreachable, from: "0.0.0.0:68", to: "10.0.0.3:67", payloadLength: 0, source: "10.0.0.3")
        }
        assertThrows(.notAnswered(.multicastOrBroadcast)) {
            try rebuilt(.portUnreachable, from: "10.0.0.2:5353", to: "224.0.0.251:5353", payloadLength: 0, source: "10.0.0.3")
        }
    }

    func testTruncatedOffendingPacketNeverTraps() {
        for packet in [Fixture.ipv4UDP, Fixture.ipv6UDP, Fixture.ipv6HopByHopFragment] {
            let source = packet[0] >> 4 == 4 ? "8.8.8.8" : "2001:db8::1"
            for length in 0...packet.count {
                let cut = Array(packet[0..<length])
                if let out = try? error(.portUnreachable, about: cut, from: source) {
                    XCTAssertEqual(length, packet.count, "only the whole packet parses")
                    XCTAssertNoThrow(try out.withUnsafeBytes { try ICMPSummary(parsing: $0, checks: .all) })
                }
            }
        }
    }

    /// A UDP/IP packet with a payload of `payload` bytes, built with the existing emitters.
    private func udpPacket(source: String, destination: String, payload: Int) -> [UInt8] {
        let s = IPAddress(source)!, d = IPAddress(destination)!
        let ipLength = s.isIPv4 ? 20 : 40
        var out = [UInt8](repeating: 0x5A, count: ipLength + 8 + payload)
        out.withUnsafeMutableBytes { b in
            if s.isIPv4 {
                IPv4Header(source: s, destination: d, protocol: .udp, payloadLength: 8 + payload).emit(into: b)
            } else {
                IPv6Header(source: s, destination: d, nextHeader: .udp, payloadLength: 8 + payload).emit(into: b)
            }
            UDPHeader(sourcePort: 1, destinationPort: 2).emit(into: UnsafeMutableRawBufferPointer(rebasing: b[ipLength...]), source: s, destination: d)
        }
        return out
    }
}
