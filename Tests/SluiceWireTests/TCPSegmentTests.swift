import XCTest

@testable import SluiceWire

final class TCPSegmentTests: XCTestCase {
    func testDecodeIPv4SynFixture() throws {
        try Fixture.ipv4TCPSyn.withUnsafeBytes { buffer in
            let ip = try IPv4Packet(validating: buffer)
            let tcp = try TCPSegment(validating: ip.payload)
            XCTAssertEqual(tcp.sourcePort, 54321)
            XCTAssertEqual(tcp.destinationPort, 443)
            XCTAssertEqual(tcp.sequenceNumber, 0x1234_5678)
            XCTAssertEqual(tcp.acknowledgmentNumber, 0)
            XCTAssertEqual(tcp.headerLength, 40)
            XCTAssertEqual(tcp.flags, .syn)
            XCTAssertEqual(tcp.window, 64240)
            XCTAssertEqual(tcp.checksum, 0xCAB1)
            XCTAssertEqual(tcp.urgentPointer, 0)
            XCTAssertEqual(tcp.optionsRange, 20..<40)
            XCTAssertEqual(tcp.payloadRange, 40..<40)
            XCTAssertEqual(tcp.sequenceLength, 1)
            XCTAssertEqual(
                Array(tcp.options),
                [.maximumSegmentSize(1460), .sackPermitted, .timestamps(value: 1000, echoReply: 0), .windowScale(7)])
            XCTAssertEqual(tcp.maximumSegmentSize, 1460)
            XCTAssertEqual(tcp.windowScale, 7)
            XCTAssertTrue(tcp.verifyChecksum(pseudoHeaderSum: ip.pseudoHeaderSum))
            XCTAssertTrue(tcp.verifyChecksum(source: ip.source, destination: ip.destination))
            XCTAssertFalse(tcp.verifyChecksum(source: ip.destination, destination: IPAddress("10.0.0.3")!))
        }
    }

    func testDecodeIPv6SynFixture() throws {
        try Fixture.ipv6TCPSyn.withUnsafeBytes { buffer in
            let ip = try IPv6Packet(validating: buffer)
            let tcp = try TCPSegment(validating: ip.transport)
            XCTAssertEqual(tcp.sourcePort, 40000)
            XCTAssertEqual(tcp.destinationPort, 80)
            XCTAssertEqual(tcp.sequenceNumber, 0xDEAD_BEEF)
            XCTAssertEqual(tcp.flags, .syn)
            XCTAssertEqual(tcp.window, 65535)
            XCTAssertEqual(tcp.headerLength, 28)
            XCTAssertEqual(Array(tcp.options), [.maximumSegmentSize(1440), .windowScale(9)])
            XCTAssertTrue(tcp.verifyChecksum(pseudoHeaderSum: ip.pseudoHeaderSum))
        }
    }

    func testDecodeDataFixture() throws {
        try Fixture.ipv4TCPData.withUnsafeBytes { buffer in
            let ip = try IPv4Packet(validating: buffer)
            let tcp = try TCPSegment(validating: ip.payload)
            XCTAssertEqual(tcp.flags, [.psh, .ack])
            XCTAssertEqual(tcp.sequenceNumber, 1000)
            XCTAssertEqual(tcp.acknowledgmentNumber, 2000)
            XCTAssertEqual(tcp.window, 502)
            XCTAssertEqual(String(decoding: tcp.payload, as: UTF8.self), "hello, world")
            XCTAssertEqual(tcp.sequenceLength, 12)
            XCTAssertNil(tcp.maximumSegmentSize)
            XCTAssertTrue(tcp.verifyChecksum(pseudoHeaderSum: ip.pseudoHeaderSum))
        }
    }

    func testBadChecksumDetected() throws {
        for index in [20, 24, 33, 36, 39, 45, 51] {  // port, seq, flags, checksum, window, payload...
            var bytes = Fixture.ipv4TCPData
            bytes[index] ^= 0x40
            try bytes.withUnsafeBytes { buffer in
                let ip = try IPv4Packet(validating: buffer)
                XCTAssertFalse(try TCPSegment(validating: ip.payload).verifyChecksum(pseudoHeaderSum: ip.pseudoHeaderSum))
            }
        }
    }

    func testFlagsDescription() {
        XCTAssertEqual(TCPFlags([.syn, .ack]).description, "SYN|ACK")
        XCTAssertEqual(TCPFlags(rawValue: 0xFF).description, "FIN|SYN|RST|PSH|ACK|URG|ECE|CWR")
        XCTAssertEqual(TCPFlags().description, "none")
    }

    func testTruncatedAtEveryLengthThrows() {
        let segment = Array(Fixture.ipv4TCPSyn[20...])
        for length in 0..<segment.count {
            segment.withUnsafeBytes { buffer in
                assertThrowsAny("at length \(length)") {
                    try TCPSegment(validating: UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
                }
            }
        }
    }

    func testImpossibleDataOffsets() {
        let segment = Array(Fixture.ipv4TCPSyn[20...])  // 40 bytes
        let cases: [(UInt8, WireError?)] = [
            (0x00, .badHeaderLength(.tcp, 0)),
            (0x40, .badHeaderLength(.tcp, 16)),
            (0x50, nil),
            (0xA0, nil),
            (0xB0, .badHeaderLength(.tcp, 44)),
            (0xF0, .badHeaderLength(.tcp, 60)),
        ]
        for (value, expected) in cases {
            var bytes = segment
            bytes[12] = value
            bytes.withUnsafeBytes { buffer in
                if let expected {
                    assertThrows(expected) { try TCPSegment(validating: buffer) }
                } else {
                    XCTAssertNotNil(try? TCPSegment(validating: buffer))
                }
            }
        }
    }

    func testMalformedOptionsStopTheWalk() {
        // (options bytes, expected options, malformed?)
        let cases: [([UInt8], [TCPOption], Bool)] = [
            ([1, 1, 1, 1], [], false),
            ([0, 2, 4, 5, 0xB4], [], false),  // end of list first: the rest is padding
            ([2, 4, 5, 0xB4, 0, 0xFF, 0xFF, 0xFF], [.maximumSegmentSize(1460)], false),
            ([2, 3, 5, 0, 0, 0, 0, 0], [], true),  // MSS of length 3
            ([2, 4, 5], [], true),  // MSS cut off
            ([2], [], true),  // no length byte
            ([30, 1, 0, 0], [], true),  // length below 2
            ([30, 0, 0, 0], [], true),  // length 0 must not loop forever
            ([30, 6, 1, 2, 3, 4, 2, 4, 1, 0], [.unknown(kind: 30, length: 6), .maximumSegmentSize(256)], false),
            ([1, 3, 3, 14, 4, 2, 1, 1], [.windowScale(14), .sackPermitted], false),
        ]
        for (bytes, expected, malformed) in cases {
            bytes.withUnsafeBytes { buffer in
                var walk = TCPOptions(buffer)
                var seen: [TCPOption] = []
                while let option = walk.next() { seen.append(option) }
                XCTAssertEqual(seen, expected, "\(bytes)")
                XCTAssertEqual(walk.isMalformed, malformed, "\(bytes)")
            }
        }
    }

    func testHeaderEmitReproducesIPv6Syn() throws {
        // MSS then NOP + window scale is exactly how TCPHeader emits options.
        let fixture = Fixture.ipv6TCPSyn
        let (header, source, destination) = try fixture.withUnsafeBytes { buffer in
            let ip = try IPv6Packet(validating: buffer)
            return (TCPHeader(try TCPSegment(validating: ip.transport)), ip.source, ip.destination)
        }
        XCTAssertEqual(header.length, 28)
        var out = [UInt8](repeating: 0xEE, count: 28)
        out.withUnsafeMutableBytes { header.emit(into: $0, source: source, destination: destination) }
        XCTAssertEqual(out, Array(fixture[40...]))
    }

    func testHeaderEmitReproducesDataSegment() throws {
        let fixture = Fixture.ipv4TCPData
        var out = Array(fixture[20...])
        for i in 0..<20 { out[i] = 0xEE }  // header bytes are rewritten, payload stays
        let header = TCPHeader(
            sourcePort: 8080, destinationPort: 50000, sequenceNumber: 1000, acknowledgmentNumber: 2000,
            flags: [.psh, .ack], window: 502)
        out.withUnsafeMutableBytes {
            header.emit(into: $0, source: IPAddress("172.16.0.5")!, destination: IPAddress("172.16.0.9")!)
        }
        XCTAssertEqual(out, Array(fixture[20...]))
    }

    func testHeaderRoundTripAcrossOptionCombinations() throws {
        let source = IPAddress("2001:db8::1")!, destination = IPAddress("2001:db8::2")!
        for (mss, scale): (UInt16?, UInt8?) in [(nil, nil), (1400, nil), (nil, 14), (65535, 0)] {
            let header = TCPHeader(
                sourcePort: 1, destinationPort: 65535, sequenceNumber: .max, acknowledgmentNumber: 7,
                flags: [.syn, .ack, .ece, .cwr], window: 1234, urgentPointer: 9,
                maximumSegmentSize: mss, windowScale: scale)
            var out = [UInt8](repeating: 0, count: header.length + 3)
            out[header.length...] = [1, 2, 3]
            out.withUnsafeMutableBytes { header.emit(into: $0, source: source, destination: destination) }
            try out.withUnsafeBytes { buffer in
                let tcp = try TCPSegment(validating: buffer)
                XCTAssertEqual(TCPHeader(tcp), header)
                XCTAssertEqual(Array(tcp.payload), [1, 2, 3])
                XCTAssertTrue(tcp.verifyChecksum(source: source, destination: destination))
            }
        }
    }
}
