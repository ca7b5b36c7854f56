import XCTest

@testable import SluiceWire

final class ICMPEchoReplyTests: XCTestCase {
    private func reply(_ packet: [UInt8], identification: UInt16 = 0) throws -> [UInt8] {
        var out = [UInt8](repeating: 0xEE, count: packet.count + 8)
        let length = try packet.withUnsafeBytes { p in
            try out.withUnsafeMutableBytes { o in try ICMPEchoReply.emit(answering: p, identification: identification, into: o) }
        }
        XCTAssertLessThanOrEqual(length, packet.count, "a reply is never longer than its request")
        XCTAssertTrue(out[length...].allSatisfy { $0 == 0xEE }, "wrote past its length")
        return Array(out[0..<length])
    }

    func testIPv4ReplyMatchesFixture() throws {
        XCTAssertEqual(try reply(Fixture.ipv4EchoRequest), Fixture.ipv4EchoReply)
        let again = try reply(Fixture.ipv4EchoRequest, identification: 0x0102)
        XCTAssertEqual(Array(again[4..<6]), [1, 2])
        XCTAssertEqual(try again.withUnsafeBytes { try ICMPSummary(parsing: $0, checks: .all) }.kind, .echoReply(identifier: 0x1234, sequenceNumber: 1))
    }

    func testIPv6ReplyDropsExtensionHeadersAndMatchesFixture() throws {
        XCTAssertEqual(try reply(Fixture.ipv6EchoRequest), Fixture.ipv6EchoReply)
    }

    func testIPv4OptionsAreNotReflected() throws {
        // The request with a 4-byte option (NOP ×3, EOL): IHL 6.
        var request = Array(Fixture.ipv4EchoRequest[0..<20]) + [1, 1, 1, 0] + Array(Fixture.ipv4EchoRequest[20...])
        request[0] = 0x46
        request[3] += 4
        request[10] = 0
        request[11] = 0
        let sum = request.withUnsafeBytes { Checksum.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<24])) }
        request[10] = UInt8(sum >> 8)
        request[11] = UInt8(sum & 0xFF)
        XCTAssertEqual(try reply(request), Fixture.ipv4EchoReply)
    }

    func testLargeReplyRoundTrips() throws {
        // A 65,000-byte ping (as reassembly would hand over): same data back, checksums good.
        let data = (0..<65_000 - 28).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var request = [UInt8](repeating: 0, count: 65_000)
        request.withUnsafeMutableBytes { b in
            IPv4Header(source: IPAddress("10.0.0.2")!, destination: IPAddress("10.9.9.9")!, protocol: .icmp, payloadLength: 65_000 - 20, dontFragment: false)
                .emit(into: b)
            let message = UnsafeMutableRawBufferPointer(rebasing: b[20...])
            data.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: message[8...]).copyMemory(from: $0) }
            ICMPHeader(echoType: 8, identifier: 9, sequenceNumber: 65535).emit(into: message)
        }
        let out = try reply(request)
        XCTAssertEqual(out.count, 65_000)
        XCTAssertEqual(Array(out[28...]), data)
        XCTAssertEqual(try out.withUnsafeBytes { try ICMPSummary(parsing: $0, checks: .all) }.kind, .echoReply(identifier: 9, sequenceNumber: 65535))
    }

    func testNotAnswered() {
        var toMulticast = Fixture.ipv4EchoRequest
        toMulticast[16] = 239
        var toBroadcast = Fixture.ipv4EchoRequest
        for i in 16..<20 { toBroadcast[i] = 255 }
        var fromZero = Fixture.ipv4EchoRequest
        for i in 12..<16 { fromZero[i] = 0 }
        var fromLoopback = Fixture.ipv4EchoRequest
        fromLoopback[12] = 127
        var v6ToMulticast = Fixture.ipv6EchoRequest
        v6ToMulticast[24] = 0xFF
        var v6FromUnspecified = Fixture.ipv6EchoRequest
        for i in 8..<24 { v6FromUnspecified[i] = 0 }
        let cases: [(String, [UInt8], WireError)] = [
            ("an echo reply", Fixture.ipv4EchoReply, .notAnswered(.notEchoRequest)),
            ("an ICMPv6 reply", Fixture.ipv6EchoReply, .notAnswered(.notEchoRequest)),
            ("an error", Fixture.ipv4PortUnreachable, .notAnswered(.notEchoRequest)),
            ("to multicast", fixChecksums(toMulticast), .notAnswered(.multicastOrBroadcast)),
            ("to broadcast", fixChecksums(toBroadcast), .notAnswered(.multicastOrBroadcast)),
            ("from 0.0.0.0", fixChecksums(fromZero), .notAnswered(.sourceNotUnicast)),
            ("from loopback", fixChecksums(fromLoopback), .notAnswered(.sourceNotUnicast)),
            ("v6 to multicast", fixChecksums(v6ToMulticast), .notAnswered(.multicastOrBroadcast)),
            ("v6 from ::", fixChecksums(v6FromUnspecified), .notAnswered(.sourceNotUnicast)),
            ("TCP", Fixture.ipv4TCPSyn, .unsupportedProtocol(.tcp)),
            ("a fragment", Fixture.ipv6LaterFragment, .fragment),
            ("empty", [], .truncated(.ip)),
        ]
        for (name, packet, expected) in cases {
            assertThrows(expected, name) { try reply(packet) }
        }
    }

    func testBadChecksumsAreNotAnswered() {
        var badIP = Fixture.ipv4EchoRequest
        badIP[11] ^= 1
        var badICMP = Fixture.ipv4EchoRequest
        badICMP[30] ^= 1
        var badICMPv6 = Fixture.ipv6EchoRequest
        badICMPv6[60] ^= 1
        assertThrows(.badChecksum(.ipv4)) { try reply(badIP) }
        assertThrows(.badChecksum(.icmp)) { try reply(badICMP) }
        assertThrows(.badChecksum(.icmpv6)) { try reply(badICMPv6) }
    }

    func testTruncatedAtEveryLength() {
        for packet in [Fixture.ipv4EchoRequest, Fixture.ipv6EchoRequest] {
            for length in 0..<packet.count {
                assertThrowsAny("at \(length)") { try reply(Array(packet[0..<length])) }
            }
        }
    }

    /// Recomputes the IPv4 header and ICMP/ICMPv6 checksums of an echo request after an edit.
    private func fixChecksums(_ packet: [UInt8]) -> [UInt8] {
        var p = packet
        p.withUnsafeMutableBytes { b in
            if b[0] >> 4 == 4 {
                let ip = try! IPv4Packet(validating: UnsafeRawBufferPointer(b))
                IPv4Header(ip).emit(into: b)
                let message = UnsafeMutableRawBufferPointer(rebasing: b[ip.headerLength...])
                ICMPHeader(try! ICMPv4Message(validating: UnsafeRawBufferPointer(message))).emit(into: message)
            } else {
                let ip = try! IPv6Packet(validating: UnsafeRawBufferPointer(b))
                let message = UnsafeMutableRawBufferPointer(rebasing: b[ip.transportOffset...])
                ICMPHeader(try! ICMPv6Message(validating: UnsafeRawBufferPointer(message)))
                    .emit(into: message, source: ip.source, destination: ip.destination)
            }
        }
        return p
    }
}
