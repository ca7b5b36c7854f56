import SluiceTestSupport
import XCTest

@testable import SluiceWire

final class TCPResetTests: XCTestCase {
    private func reset(answering packet: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0xEE, count: TCPReset.maximumLength + 8)
        let length = try packet.withUnsafeBytes { p in
            try out.withUnsafeMutableBytes { o in try TCPReset.emit(answering: p, into: o) }
        }
        XCTAssertTrue(out[length...].allSatisfy { $0 == 0xEE }, "wrote past its length")
        return Array(out[0..<length])
    }

    /// Parses an RST and checks both checksums; returns (summary, seq, ack, flags).
    private func parse(_ rst: [UInt8]) throws -> (PacketSummary, UInt32, UInt32, TCPFlags) {
        let s = try rst.withUnsafeBytes { buffer in try PacketSummary(parsing: buffer, checks: .all) }
        let (seq, ack, flags) = try rst.withUnsafeBytes { buffer in
            let tcp = try TCPSegment(validating: UnsafeRawBufferPointer(rebasing: buffer[s.transportOffset...]))
            XCTAssertEqual(tcp.window, 0)
            XCTAssertTrue(tcp.payload.isEmpty)
            return (tcp.sequenceNumber, tcp.acknowledgmentNumber, tcp.flags)
        }
        return (s, seq, ack, flags)
    }

    func testIPv4SynGetsPinnedRstAck() throws {
        // Checked with tshark: 93.184.216.34 → 10.0.0.2 TCP 443 → 54321 [RST, ACK], checksums good.
        let expected = hex("""
            45000028 00004000 4006faf3 5db8d822 0a000002
            01bbd431 00000000 12345679 50140000 315a0000
            """)
        let rst = try reset(answering: Fixture.ipv4TCPSyn)
        XCTAssertEqual(rst, expected)
        let (s, seq, ack, flags) = try parse(rst)
        XCTAssertEqual(s.source, SocketEndpoint("93.184.216.34:443"))
        XCTAssertEqual(s.destination, SocketEndpoint("10.0.0.2:54321"))
        XCTAssertEqual(seq, 0)
        XCTAssertEqual(ack, 0x1234_5679)
        XCTAssertEqual(flags, [.rst, .ack])
    }

    func testIPv6SynGetsPinnedRstAck() throws {
        // Checked with tshark: 2001:db8::1 → fd00::2 TCP 80 → 40000 [RST, ACK], checksum good.
        let expected = hex("""
            60000000 00140640
            20010db8 00000000 00000000 00000001
            fd000000 00000000 00000000 00000002
            00509c40 00000000 deadbef0 50140000 4ae50000
            """)
        let rst = try reset(answering: Fixture.ipv6TCPSyn)
        XCTAssertEqual(rst, expected)
        let (s, seq, ack, flags) = try parse(rst)
        XCTAssertEqual(s.source, SocketEndpoint("[2001:db8::1]:80"))
        XCTAssertEqual(s.destination, SocketEndpoint("[fd00::2]:40000"))
        XCTAssertEqual(seq, 0)
        XCTAssertEqual(ack, 0xDEAD_BEF0)
        XCTAssertEqual(flags, [.rst, .ack])
    }

    /// Builds an IPv4 or IPv6 TCP packet with the given fields and payload.
    private func packet(v6: Bool, seq: UInt32, ack: UInt32, flags: TCPFlags, payload: [UInt8]) -> [UInt8] {
        let source = IPAddress(v6 ? "2001:db8::10" : "10.9.8.7")!
        let destination = IPAddress(v6 ? "2001:db8::20" : "10.9.8.6")!
        let tcp = TCPHeader(
            sourcePort: 33000, destinationPort: 22, sequenceNumber: seq, acknowledgmentNumber: ack,
            flags: flags, window: 1000, maximumSegmentSize: flags.contains(.syn) ? 1400 : nil)
        let ipLength = v6 ? IPv6Header.length : IPv4Header.length
        var out = [UInt8](repeating: 0, count: ipLength + tcp.length) + payload
        out.withUnsafeMutableBytes { buffer in
            let segmentLength = buffer.count - ipLength
            if v6 {
                IPv6Header(source: source, destination: destination, nextHeader: .tcp, payloadLength: segmentLength)
                    .emit(into: buffer)
            } else {
                IPv4Header(source: source, destination: destination, protocol: .tcp, payloadLength: segmentLength)
                    .emit(into: buffer)
            }
            tcp.emit(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[ipLength...]), source: source,
                destination: destination)
        }
        return out
    }

    func testSequenceAndAcknowledgmentRules() throws {
        // (name, seq, ack, flags, payload length, expected seq, expected ack, expected flags)
        let cases: [(String, UInt32, UInt32, TCPFlags, Int, UInt32, UInt32, TCPFlags)] = [
            ("bare SYN", 100, 0, .syn, 0, 0, 101, [.rst, .ack]),
            ("SYN with data (TFO)", 100, 0, .syn, 10, 0, 111, [.rst, .ack]),
            ("SYN|FIN with data", 100, 0, [.syn, .fin], 5, 0, 107, [.rst, .ack]),
            ("SYN at the top of sequence space", .max, 0, .syn, 0, 0, 0, [.rst, .ack]),
            ("SYN with ECN", 7, 0, [.syn, .ece, .cwr], 0, 0, 8, [.rst, .ack]),
            ("segment with ACK", 5000, 777, [.ack, .psh], 3, 777, 0, .rst),
            ("SYN|ACK", 5000, 0xFFFF_FFFF, [.syn, .ack], 0, 0xFFFF_FFFF, 0, .rst),
            ("bare FIN", 9, 0, .fin, 0, 0, 10, [.rst, .ack]),
        ]
        for v6 in [false, true] {
            for (name, seq, ack, flags, payloadLength, wantSeq, wantAck, wantFlags) in cases {
                let input = packet(v6: v6, seq: seq, ack: ack, flags: flags, payload: Array(repeating: 0x61, count: payloadLength))
                let (s, gotSeq, gotAck, gotFlags) = try parse(try reset(answering: input))
                XCTAssertEqual(gotSeq, wantSeq, "\(name) v6=\(v6)")
                XCTAssertEqual(gotAck, wantAck, "\(name) v6=\(v6)")
                XCTAssertEqual(gotFlags, wantFlags, "\(name) v6=\(v6)")
                XCTAssertEqual(s.source.port, 22)
                XCTAssertEqual(s.destination.port, 33000)
                XCTAssertEqual(s.source.address, IPAddress(v6 ? "2001:db8::20" : "10.9.8.6"))
                XCTAssertEqual(s.length, v6 ? TCPReset.ipv6Length : TCPReset.ipv4Length)
            }
        }
    }

    func testUnanswerablePackets() {
        let cases: [(String, [UInt8], WireError)] = [
            ("RST", packet(v6: false, seq: 1, ack: 0, flags: .rst, payload: []), .resetNotAnswered),
            ("RST|ACK over IPv6", packet(v6: true, seq: 1, ack: 2, flags: [.rst, .ack], payload: []), .resetNotAnswered),
            ("UDP", Fixture.ipv4UDP, .unsupportedProtocol(.udp)),
            ("fragment", Fixture.ipv4Fragment, .fragment),
            ("IPv6 fragment", Fixture.ipv6LaterFragment, .fragment),
            ("empty", [], .truncated(.ip)),
            ("bad version", [0x70, 0, 0, 0], .badVersion(7)),
        ]
        for (name, input, expected) in cases {
            do {
                _ = try reset(answering: input)
                XCTFail("\(name): expected \(expected)")
            } catch {
                XCTAssertEqual(error as? WireError, expected, name)
            }
        }
    }
}
