import SluiceTestSupport
import SluiceWire
import XCTest

@testable import SluiceMux

final class FrameCodecTests: XCTestCase {
    /// One of every control frame, with edge values.
    static let controlFrames: [Frame] = [
        .open(stream: 1, window: 0, proto: .tcp, destination: Destination(host: .ip(IPAddress("0.0.0.0")!), port: 0)),
        .open(stream: 3, window: .max, proto: .udp, destination: Destination(host: .ip(IPAddress("::1")!), port: .max)),
        .open(
            stream: .max, window: 65536, proto: .tcp,
            destination: Destination(host: .domain(String(repeating: "a", count: 255)), port: 443)),
        .open(stream: 7, window: 1, proto: .tcp, destination: Destination(host: .domain("x"), port: 1)),
        .openOK(stream: 9, window: 0),
        .credit(stream: 11, increment: .max),
        .fin(stream: 13),
        .reset(stream: 15, reason: .closed, message: ""),
        .reset(stream: 17, reason: .unreachable, message: String(repeating: "é", count: 100)),
        .reset(stream: 19, reason: .limit, message: "stream cap 1024 reached"),
        .ping(0),
        .pong(0xDEAD_BEEF_CAFE_F00D),
        .goAway(.closed),
        .datagramError(stream: 21, code: .tooBig, mtu: .max, endpoint: SocketEndpoint("[::]:0")!),
        .datagramError(stream: 23, code: .portUnreachable, mtu: 0, endpoint: SocketEndpoint("255.255.255.255:65535")!),
    ]

    func testRoundTripEveryControlFrame() throws {
        for frame in Self.controlFrames {
            let bytes = try encode([frame])
            XCTAssertEqual(bytes.count, frame.encodedLength, "\(frame)")
            let (frames, error) = decodeAll(bytes)
            XCTAssertNil(error, "\(frame)")
            XCTAssertEqual(frames, [.control(frame)])
        }
        for reason in ResetReason.allCases {
            let frames: [Frame] = [.reset(stream: 1, reason: reason, message: "m"), .goAway(reason)]
            XCTAssertEqual(decodeAll(try encode(frames)).frames, frames.map { .control($0) })
        }
    }

    func testManyFramesInOneRecord() throws {
        var storage = [UInt8](repeating: 0, count: Frame.maximumRecordPlaintext)
        var expected: [Decoded] = []
        let count = try storage.withUnsafeMutableBytes { buffer in
            var encoder = FrameEncoder(buffer)
            var i: UInt32 = 0
            while true {
                i += 1
                let frame = Self.controlFrames[Int(i) % Self.controlFrames.count]
                guard try encoder.append(frame) else { break }
                expected.append(.control(frame))
                let payload = (0..<Int(i % 300) + 1).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(i)) }
                guard payload.withUnsafeBytes({ encoder.appendData(stream: i * 2 + 1, payload: $0) }) else { break }
                expected.append(.data(stream: i * 2 + 1, payload: payload))
            }
            XCTAssertLessThan(encoder.remaining, 300 + Frame.headerLength)
            return encoder.count
        }
        XCTAssertGreaterThan(expected.count, 200)
        let (frames, error) = decodeAll(Array(storage[0..<count]))
        XCTAssertNil(error)
        XCTAssertEqual(frames, expected)
    }

    func testDataPayloadPointsIntoThePlaintext() {
        let bytes = hex("05 00000001 0000  03 00000001 0003 616263")
        bytes.withUnsafeBytes { buffer in
            var decoder = FrameDecoder(buffer)
            _ = try? decoder.next()
            guard case .data(let stream, let payload)? = try? decoder.next() else { return XCTFail("no DATA") }
            XCTAssertEqual(stream, 1)
            XCTAssertEqual(payload.baseAddress, buffer.baseAddress! + 14)
            XCTAssertEqual(payload.count, 3)
            XCTAssertTrue(decoder.isAtEnd)
        }
    }

    func testZeroCopyDataFromASocketRead() {
        var storage = [UInt8](repeating: 0xEE, count: 100)
        let count = storage.withUnsafeMutableBytes { buffer in
            var encoder = FrameEncoder(buffer)
            XCTAssertTrue(try! encoder.append(.credit(stream: 3, increment: 9)))
            let space = encoder.dataPayloadSpace()
            XCTAssertEqual(space.count, 100 - 11 - 7)
            XCTAssertEqual(space.baseAddress, buffer.baseAddress! + 11 + 7)
            // Pretend read(2) put 5 bytes there.
            for (i, b) in "hello".utf8.enumerated() { space[i] = b }
            encoder.commitData(stream: 3, count: 5)
            XCTAssertEqual(encoder.count, 11 + 7 + 5)
            return encoder.count
        }
        XCTAssertEqual(
            decodeAll(Array(storage[0..<count])).frames,
            [.control(.credit(stream: 3, increment: 9)), .data(stream: 3, payload: Array("hello".utf8))])
    }

    func testDataPayloadSpaceLimits() {
        var big = [UInt8](repeating: 0, count: 70_000)
        big.withUnsafeMutableBytes { buffer in
            var encoder = FrameEncoder(buffer)
            XCTAssertEqual(encoder.buffer.count, Frame.maximumRecordPlaintext)
            XCTAssertEqual(encoder.dataPayloadSpace().count, FrameEncoder.maximumDataPayload)
            XCTAssertEqual(FrameEncoder.maximumDataPayload, 65_512)
            encoder.commitData(stream: 1, count: FrameEncoder.maximumDataPayload)
            XCTAssertEqual(encoder.remaining, 0)
            XCTAssertEqual(encoder.dataPayloadSpace().count, 0)
            XCTAssertFalse(try! encoder.append(.fin(stream: 1)))
            encoder.removeAll()
            XCTAssertEqual(encoder.count, 0)
        }
        var small = [UInt8](repeating: 0, count: 8)
        small.withUnsafeMutableBytes { buffer in
            var encoder = FrameEncoder(buffer)
            XCTAssertEqual(encoder.dataPayloadSpace().count, 1)
            XCTAssertFalse(([1, 2] as [UInt8]).withUnsafeBytes { encoder.appendData(stream: 1, payload: $0) })
            XCTAssertTrue(([1] as [UInt8]).withUnsafeBytes { encoder.appendData(stream: 1, payload: $0) })
            XCTAssertEqual(encoder.dataPayloadSpace().count, 0)
        }
    }

    func testFullEncoderWritesNothing() throws {
        var storage = [UInt8](repeating: 0xEE, count: 20)
        try storage.withUnsafeMutableBytes { buffer in
            var encoder = FrameEncoder(buffer)
            XCTAssertTrue(try encoder.append(.ping(1)))  // 15 bytes
            XCTAssertFalse(try encoder.append(.ping(2)))
            XCTAssertFalse(try encoder.append(.credit(stream: 1, increment: 1)))  // 11 > 5
            XCTAssertFalse(try encoder.append(.fin(stream: 1)))  // 7 > 5
            XCTAssertEqual(encoder.count, 15)
        }
        XCTAssertTrue(storage[15...].allSatisfy { $0 == 0xEE })
    }

    func testResetMessageIsCutAtACharacterBoundary() throws {
        // 201 bytes of ASCII: cut to 200.
        let ascii = String(repeating: "z", count: 201)
        var bytes = try encode([.reset(stream: 1, reason: .closed, message: ascii)])
        XCTAssertEqual(bytes.count, 7 + 1 + 200)
        XCTAssertEqual(decodeAll(bytes).frames, [.control(.reset(stream: 1, reason: .closed, message: String(ascii.dropLast())))])
        // 67 three-byte characters (201 bytes): 66 fit, 198 bytes.
        let wide = String(repeating: "€", count: 67)
        bytes = try encode([.reset(stream: 1, reason: .closed, message: wide)])
        XCTAssertEqual(bytes.count, 7 + 1 + 198)
        XCTAssertEqual(decodeAll(bytes).frames, [.control(.reset(stream: 1, reason: .closed, message: String(wide.dropLast())))])
    }

    func testInvalidUTF8InResetMessageIsRepaired() {
        let (frames, error) = decodeAll(hex("06 00000001 0003 00 ff61"))
        XCTAssertNil(error)
        XCTAssertEqual(frames, [.control(.reset(stream: 1, reason: .closed, message: "\u{FFFD}a"))])
    }

    func testTruncatedAtEveryLength() throws {
        let frames = Self.controlFrames + [.fin(stream: 1)]
        var bytes = try encode(frames)
        bytes += hex("03 00000001 0004 01020304")
        var boundaries: Set<Int> = [0]
        var at = 0
        for frame in frames {
            at += frame.encodedLength
            boundaries.insert(at)
        }
        for length in 0..<bytes.count {
            let (decoded, error) = decodeAll(Array(bytes[0..<length]))
            if boundaries.contains(length) {
                XCTAssertNil(error, "at length \(length)")
            } else {
                XCTAssertEqual(error, .truncated, "at length \(length)")
            }
            XCTAssertEqual(decoded.count, boundaries.filter { $0 > 0 && $0 <= length }.count, "at length \(length)")
        }
    }

    func testLengthsThatDoNotFitTheirType() {
        // (type, stream, payload, expected error)
        let cases: [(UInt8, UInt32, String, FrameError)] = [
            (0x02, 1, "000000", .badLength(.openOK, 3)),
            (0x02, 1, "0000000000", .badLength(.openOK, 5)),
            (0x03, 1, "", .badLength(.data, 0)),
            (0x04, 1, "", .badLength(.credit, 0)),
            (0x04, 1, "0000000001", .badLength(.credit, 5)),
            (0x05, 1, "00", .badLength(.fin, 1)),
            (0x06, 1, "", .badLength(.reset, 0)),
            (0x06, 1, "00" + String(repeating: "61", count: 201), .badLength(.reset, 202)),
            (0x07, 0, "00000000000000", .badLength(.ping, 7)),
            (0x08, 0, "000000000000000000", .badLength(.pong, 9)),
            (0x09, 0, "", .badLength(.goAway, 0)),
            (0x09, 0, "0000", .badLength(.goAway, 2)),
            (0x01, 1, "00000000", .badLength(.open, 4)),
            (0x01, 1, "0000000006", .badLength(.open, 5)),
            (0x01, 1, "000000000601 5db8d822", .badLength(.open, 10)),  // port missing
            (0x01, 1, "000000000601 5db8d822 01bb 00", .badLength(.open, 13)),  // one byte too many
            (0x01, 1, "000000000604 5db8d822 01bb", .badLength(.open, 12)),  // IPv6 address cut
            (0x01, 1, "000000000603 05 6162 0050", .badLength(.open, 11)),  // name shorter than its length
            (0x01, 1, "000000000603", .badLength(.open, 6)),  // no name length
            (0x01, 1, "000000000602 5db8d822 01bb", .badAddressType(2)),
            (0x01, 1, "000000000600", .badAddressType(0)),
            (0x01, 1, "000000000603 00 0050", .badDomain),  // domain of length 0
            (0x01, 1, "000000000603 03 610062 0050", .badDomain),  // NUL inside the name
            (0x01, 1, "000000000603 03 612062 0050", .badDomain),  // space inside the name
            (0x06, 1, "07", .badReason(7)),
            (0x06, 1, "ff6d7367", .badReason(255)),
            (0x09, 0, "07", .badReason(7)),
            (0x07, 1, "0000000000000000", .badStream(.ping, 1)),
            (0x08, 9, "0000000000000000", .badStream(.pong, 9)),
            (0x09, 3, "00", .badStream(.goAway, 3)),
            (0x03, 0, "61", .badStream(.data, 0)),
            (0x05, 0, "", .badStream(.fin, 0)),
            (0x00, 1, "", .unknownType(0)),
            (0x0C, 1, "00000001", .badStream(.hello, 1)),
            (0x0C, 0, "000001", .badLength(.hello, 3)),
            (0x0C, 0, "0000000100", .badLength(.hello, 5)),
            (0x0D, 1, "00000001", .badStream(.udpPath, 1)),
            (0x0E, 0, "0101", .badLength(.udpPathUse, 2)),
            (0x0F, 1, "", .unknownType(15)),
            (0xFF, 0, "0102", .unknownType(255)),
        ]
        for (type, stream, payloadHex, expected) in cases {
            let payload = hex(payloadHex)
            let frame =
                [type] + withUnsafeBytes(of: stream.bigEndian) { Array($0) }
                + withUnsafeBytes(of: UInt16(payload.count).bigEndian) { Array($0) } + payload
            // Before and after a valid frame: the error must surface either way.
            XCTAssertEqual(decodeAll(frame).error, expected, "\(type) \(payloadHex)")
            let (frames, error) = decodeAll(hex("05 00000001 0000") + frame + hex("05 00000001 0000"))
            XCTAssertEqual(error, expected, "\(type) \(payloadHex)")
            XCTAssertEqual(frames, [.control(.fin(stream: 1))])
        }
    }

    func testDomainOfLength255DecodesAnd256CannotBeEncoded() throws {
        let name255 = String(repeating: "b", count: 250) + ".test"
        XCTAssertEqual(name255.utf8.count, 255)
        let open = Frame.open(stream: 1, window: 1, proto: .tcp, destination: Destination(host: .domain(name255), port: 80))
        XCTAssertEqual(decodeAll(try encode([open])).frames, [.control(open)])

        for bad in ["", String(repeating: "c", count: 256), "exa mple.com", "nul\u{0}.com", "ünïcode.de"] {
            let frame = Frame.open(stream: 1, window: 1, proto: .tcp, destination: Destination(host: .domain(bad), port: 80))
            XCTAssertThrowsError(try encode([frame]), "\(bad.utf8.count) bytes") {
                XCTAssertEqual($0 as? FrameError, .badDomain)
            }
            XCTAssertFalse(Destination.isValidDomain(bad))
        }
        XCTAssertTrue(Destination.isValidDomain("_sip._tcp.example-1.COM."))
    }

    func testEncoderRejectsFramesOnTheWrongStream() {
        for frame: Frame in [.fin(stream: 0), .credit(stream: 0, increment: 1), .openOK(stream: 0, window: 1)] {
            XCTAssertThrowsError(try encode([frame])) {
                XCTAssertEqual($0 as? FrameError, .badStream(frame.type, 0))
            }
        }
    }

    func testErrorsAndFramesReadAsSentences() {
        XCTAssertEqual(
            FrameError.badLength(.ping, 7).description, "PING frame with a payload of 7 bytes, which does not fit its type")
        XCTAssertEqual(
            FrameError.badStream(.data, 0).description, "DATA frame on stream 0: stream 0 is the carrier itself")
        XCTAssertEqual(Destination(host: .domain("example.com"), port: 443).description, "example.com:443")
        XCTAssertEqual(Destination(SocketEndpoint("[2001:db8::1]:443")!).description, "[2001:db8::1]:443")
        hex("07 00000000 0008 0000000000000001 03 00000005 0002 6869").withUnsafeBytes { buffer in
            var decoder = FrameDecoder(buffer)
            XCTAssertEqual(try? decoder.next()?.description, "PING")
            XCTAssertEqual(try? decoder.next()?.description, "DATA stream 5, 2 bytes")
        }
    }

    /// Random bytes and mutated valid records: any answer is fine, a trap is not.
    func testArbitraryBytesNeverTrap() throws {
        var rng = SystemRandomNumberGenerator()
        let valid = try encode(Self.controlFrames) + hex("03 00000001 0003 616263")
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                bytes = valid
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
            }
            _ = decodeAll(bytes)
        }
    }
}
