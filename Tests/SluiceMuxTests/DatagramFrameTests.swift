import SluiceTestSupport
import SluiceWire
import XCTest

@testable import SluiceMux

/// DATAGRAM and DATAGRAM_ERROR (docs/protocol.md §3, §6).
final class DatagramFrameTests: XCTestCase {
    static let v4 = SocketEndpoint("8.8.8.8:53")!
    static let v6 = SocketEndpoint("[2001:db8::1]:443")!

    /// DATAGRAM frames written out byte by byte: type 0a | stream | length | flags | [endpoint] | data.
    static let fixtures: [(String, String, Decoded)] = [
        (
            "a whole datagram, IPv4 endpoint", "0a 00000003 000a  02 01 08080808 0035 6869",
            .datagram(stream: 3, more: false, endpoint: v4, payload: Array("hi".utf8))
        ),
        (
            "a first piece, IPv6 endpoint", "0a 00000005 0016  03 04 20010db8000000000000000000000001 01bb 6869",
            .datagram(stream: 5, more: true, endpoint: v6, payload: Array("hi".utf8))
        ),
        ("a middle piece", "0a 00000005 0002  01 21", .datagram(stream: 5, more: true, endpoint: nil, payload: [0x21])),
        ("the last piece", "0a 00000005 0002  00 21", .datagram(stream: 5, more: false, endpoint: nil, payload: [0x21])),
        ("an empty datagram", "0a 00000003 0008  02 01 08080808 0035", .datagram(stream: 3, more: false, endpoint: v4, payload: [])),
    ]

    func testFixturesDecode() {
        for (name, bytes, expected) in Self.fixtures {
            let (frames, error) = decodeAll(hex(bytes))
            XCTAssertNil(error, name)
            XCTAssertEqual(frames, [expected], name)
        }
    }

    func testFixturesEncode() {
        // The first two are whole frames; the last piece needs no endpoint; a middle piece is what a
        // frame holds when the record is full, so it is made by giving more than fits.
        XCTAssertEqual(encodeDatagram(stream: 3, endpoint: Self.v4, Array("hi".utf8)), [hex("0a 00000003 000a  02 01 08080808 0035 6869")])
        XCTAssertEqual(encodeDatagram(stream: 3, endpoint: Self.v4, []), [hex("0a 00000003 0008  02 01 08080808 0035")])
        XCTAssertEqual(
            encodeDatagram(stream: 5, endpoint: Self.v6, Array("hi!!".utf8), capacity: 7 + 1 + 19 + 2),
            [hex("0a 00000005 0016  03 04 20010db8000000000000000000000001 01bb 6869"), hex("0a 00000005 0003  00 2121")])
        XCTAssertEqual(
            encodeDatagram(stream: 5, endpoint: Self.v6, Array("hi!!".utf8), capacity: 7 + 1 + 19 + 2, laterCapacity: 9),
            [
                hex("0a 00000005 0016  03 04 20010db8000000000000000000000001 01bb 6869"), hex("0a 00000005 0002  01 21"),
                hex("0a 00000005 0002  00 21"),
            ])
    }

    func testEveryFixtureEncodesFrameByFrame() {
        for (name, bytes, decoded) in Self.fixtures {
            guard case .datagram(let stream, let more, let endpoint, let payload) = decoded else { return XCTFail(name) }
            var storage = [UInt8](repeating: 0xEE, count: hex(bytes).count)
            storage.withUnsafeMutableBytes { buffer in
                var encoder = FrameEncoder(buffer)
                XCTAssertTrue(payload.withUnsafeBytes { encoder.appendDatagramFrame(stream: stream, more: more, endpoint: endpoint, payload: $0) }, name)
                XCTAssertEqual(encoder.remaining, 0, name)
                XCTAssertFalse(payload.withUnsafeBytes { encoder.appendDatagramFrame(stream: stream, more: more, endpoint: endpoint, payload: $0) }, name)
            }
            XCTAssertEqual(storage, hex(bytes), name)
        }
    }

    /// Splits `datagram` the way the `appendDatagram` doc shows: records of `capacity` bytes for the
    /// first and `laterCapacity` for the others, sealed between pieces. Returns each record.
    private func encodeDatagram(
        stream: UInt32, endpoint: SocketEndpoint, _ datagram: [UInt8], capacity: Int = Frame.maximumRecordPlaintext,
        laterCapacity: Int? = nil
    ) -> [[UInt8]] {
        var records: [[UInt8]] = []
        datagram.withUnsafeBytes { payload in
            var storage = [UInt8](repeating: 0xEE, count: capacity)
            var rest = payload
            var endpoint: SocketEndpoint? = endpoint
            while true {
                let n: Int? = storage.withUnsafeMutableBytes { buffer in
                    var encoder = FrameEncoder(buffer)
                    guard let n = encoder.appendDatagram(stream: stream, endpoint: endpoint, payload: rest) else { return nil }
                    records.append(Array(encoder.encoded))
                    return n
                }
                guard let n else { return XCTFail("an empty record of \(storage.count) bytes took no frame") }
                if n == rest.count { break }
                rest = UnsafeRawBufferPointer(rebasing: rest[n...])
                endpoint = nil
                storage = [UInt8](repeating: 0xEE, count: laterCapacity ?? capacity)
            }
        }
        return records
    }

    func testDatagramErrorRoundTripsForEveryCode() throws {
        for code in DatagramErrorCode.allCases {
            for endpoint in [Self.v4, Self.v6] {
                let frame = Frame.datagramError(stream: 9, code: code, mtu: code == .tooBig ? 1400 : 0, endpoint: endpoint)
                let bytes = try encode([frame])
                XCTAssertEqual(bytes.count, endpoint.address.isIPv4 ? 7 + 10 : 7 + 22)
                XCTAssertEqual(decodeAll(bytes).frames, [.control(frame)])
            }
        }
    }

    /// The largest datagram, split over records of several sizes and put back together by a receiver
    /// that applies the §6 rules.
    func testLargestDatagramSplitAndReassembled() throws {
        let datagram = (0..<FrameEncoder.maximumDatagram).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 5) }
        for capacity in [Frame.maximumRecordPlaintext, 16_384, 1400, 64] {
            let records = encodeDatagram(stream: 7, endpoint: Self.v6, datagram, capacity: capacity)
            let expectedFrames = capacity == Frame.maximumRecordPlaintext ? 2 : nil
            if let expectedFrames { XCTAssertEqual(records.count, expectedFrames) }
            XCTAssertTrue(records.allSatisfy { $0.count <= capacity })
            var assembler = DatagramAssembler()
            var out: [(SocketEndpoint, [UInt8])] = []
            for record in records {
                let (frames, error) = decodeAll(record)
                XCTAssertNil(error)
                for frame in frames {
                    guard case .datagram(let stream, let more, let endpoint, let payload) = frame else { return XCTFail("\(frame)") }
                    XCTAssertEqual(stream, 7)
                    if let whole = try assembler.take(more: more, endpoint: endpoint, payload) { out.append(whole) }
                }
            }
            XCTAssertEqual(out.count, 1, "capacity \(capacity)")
            XCTAssertEqual(out.first?.0, Self.v6)
            XCTAssertEqual(out.first?.1, datagram, "capacity \(capacity)")
        }
    }

    func testManyDatagramsInOneRecordRoundTrip() throws {
        var rng = SystemRandomNumberGenerator()
        var storage = [UInt8](repeating: 0, count: Frame.maximumRecordPlaintext)
        var sent: [Decoded] = []
        let count = storage.withUnsafeMutableBytes { buffer in
            var encoder = FrameEncoder(buffer)
            while true {
                let endpoint = Bool.random(using: &rng) ? Self.v4 : Self.v6
                let payload = (0..<Int.random(in: 0...700, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let stream = UInt32.random(in: 1...UInt32.max, using: &rng)
                let n = payload.withUnsafeBytes { encoder.appendDatagram(stream: stream, endpoint: endpoint, payload: $0) }
                guard let n else { break }
                sent.append(.datagram(stream: stream, more: n < payload.count, endpoint: endpoint, payload: Array(payload[0..<n])))
                if n < payload.count { break }
            }
            return encoder.count
        }
        XCTAssertGreaterThan(sent.count, 50)
        let (frames, error) = decodeAll(Array(storage[0..<count]))
        XCTAssertNil(error)
        XCTAssertEqual(frames, sent)
    }

    func testAppendDatagramWhenRoomIsShort() {
        var storage = [UInt8](repeating: 0xEE, count: 40)
        storage.withUnsafeMutableBytes { buffer in
            var encoder = FrameEncoder(buffer)
            let big = [UInt8](repeating: 1, count: 100)
            // IPv6 first frame: 27 bytes of overhead, 13 of data fit.
            XCTAssertEqual(FrameEncoder.datagramOverhead(endpoint: Self.v6), 27)
            XCTAssertEqual(FrameEncoder.datagramOverhead(endpoint: nil), 8)
            XCTAssertEqual(big.withUnsafeBytes { encoder.appendDatagram(stream: 1, endpoint: Self.v6, payload: $0) }, 13)
            XCTAssertEqual(encoder.remaining, 0)
            XCTAssertNil(big.withUnsafeBytes { encoder.appendDatagram(stream: 1, endpoint: nil, payload: $0) })
            XCTAssertNil(([] as [UInt8]).withUnsafeBytes { encoder.appendDatagram(stream: 1, endpoint: Self.v4, payload: $0) })
            encoder.removeAll()
            // A continuing frame: 8 bytes of overhead, 32 of data.
            XCTAssertEqual(big.withUnsafeBytes { encoder.appendDatagram(stream: 1, endpoint: nil, payload: $0) }, 32)
            encoder.removeAll()
            XCTAssertTrue(try! encoder.append(.ping(1)))  // 15 bytes: 25 left
            XCTAssertEqual(([] as [UInt8]).withUnsafeBytes { encoder.appendDatagram(stream: 1, endpoint: Self.v4, payload: $0) }, 0)
            XCTAssertEqual(encoder.remaining, 10)  // the 15-byte empty datagram
            XCTAssertNil(big.withUnsafeBytes { encoder.appendDatagram(stream: 1, endpoint: Self.v4, payload: $0) })  // 15 > 10
            XCTAssertEqual(big.withUnsafeBytes { encoder.appendDatagram(stream: 1, endpoint: nil, payload: $0) }, 2)
            XCTAssertEqual(encoder.remaining, 0)
        }
    }

    func testTruncatedAtEveryLength() {
        let bytes = Self.fixtures.flatMap { hex($0.1) } + hex("0b 00000005 0016  03 0500 04 20010db8000000000000000000000001 01bb")
        var boundaries: Set<Int> = [0]
        var at = 0
        for (_, frame, _) in Self.fixtures {
            at += hex(frame).count
            boundaries.insert(at)
        }
        boundaries.insert(bytes.count)
        for length in 0..<bytes.count {
            let (decoded, error) = decodeAll(Array(bytes[0..<length]))
            XCTAssertEqual(error, boundaries.contains(length) ? nil : .truncated, "at length \(length)")
            XCTAssertEqual(decoded.count, boundaries.filter { $0 > 0 && $0 <= length }.count, "at length \(length)")
        }
    }

    func testFramesThatDoNotFitTheirType() {
        let v4 = "01 08080808 0035", v6 = "04 20010db8000000000000000000000001 01bb"
        let cases: [(UInt8, UInt32, String, FrameError)] = [
            (0x0A, 1, "", .badLength(.datagram, 0)),
            (0x0A, 1, "00", .badLength(.datagram, 1)),  // a continuing piece without data
            (0x0A, 1, "01", .badLength(.datagram, 1)),
            (0x0A, 1, "03 " + v4, .badLength(.datagram, 8)),  // a first piece with MORE and no data
            (0x0A, 1, "02 01 080808", .badLength(.datagram, 5)),  // endpoint cut
            (0x0A, 1, "02 04 20010db8", .badLength(.datagram, 6)),
            (0x0A, 1, "02", .badLength(.datagram, 1)),
            (0x0A, 1, "02 03 0b 6578616d706c652e636f6d 0035 00", .badAddressType(3)),  // no domains here
            (0x0A, 1, "02 02 08080808 0035", .badAddressType(2)),
            (0x0A, 1, "04 61", .badDatagramFlags(4)),
            (0x0A, 1, "80 61", .badDatagramFlags(0x80)),
            (0x0A, 1, "ff 61", .badDatagramFlags(0xFF)),
            (0x0A, 0, "00 61", .badStream(.datagram, 0)),
            (0x0B, 1, "00 0000 " + v4, .badDatagramErrorCode(0)),
            (0x0B, 1, "05 0000 " + v4, .badDatagramErrorCode(5)),
            (0x0B, 1, "ff 0000 " + v4, .badDatagramErrorCode(255)),
            (0x0B, 1, "", .badLength(.datagramError, 0)),
            (0x0B, 1, "01 0000", .badLength(.datagramError, 3)),
            (0x0B, 1, "01 0000 01 08080808", .badLength(.datagramError, 8)),  // port missing
            (0x0B, 1, "01 0000 " + v4 + " 00", .badLength(.datagramError, 11)),  // one byte too many
            (0x0B, 1, "01 0000 " + v6 + " 00", .badLength(.datagramError, 23)),
            (0x0B, 1, "01 0000 03 01 61 0035", .badAddressType(3)),
            (0x0B, 0, "01 0000 " + v4, .badStream(.datagramError, 0)),
        ]
        for (type, stream, payloadHex, expected) in cases {
            let payload = hex(payloadHex)
            let frame =
                [type] + withUnsafeBytes(of: stream.bigEndian) { Array($0) }
                + withUnsafeBytes(of: UInt16(payload.count).bigEndian) { Array($0) } + payload
            XCTAssertEqual(decodeAll(frame).error, expected, "\(type) \(payloadHex)")
            let (frames, error) = decodeAll(hex("05 00000001 0000") + frame + hex("05 00000001 0000"))
            XCTAssertEqual(error, expected, "\(type) \(payloadHex)")
            XCTAssertEqual(frames, [.control(.fin(stream: 1))])
        }
    }

    func testDescriptions() {
        hex(Self.fixtures[1].1).withUnsafeBytes { buffer in
            var decoder = FrameDecoder(buffer)
            XCTAssertEqual(try? decoder.next()?.description, "DATAGRAM stream 5, 2 bytes, [2001:db8::1]:443, more")
        }
        XCTAssertEqual(
            FrameError.badDatagramFlags(4).description, "DATAGRAM with flags 4: only bits 0 (MORE) and 1 (ENDPOINT) are defined")
        XCTAssertEqual(FrameError.badDatagramErrorCode(9).description, "DATAGRAM_ERROR with unknown code 9: expected 1, 2, 3 or 4")
        XCTAssertEqual(DatagramErrorCode.tooBig.description, "datagram too big for the path")
    }
}

/// A receiver's view of one association (docs/protocol.md §6): a datagram starts with ENDPOINT,
/// continues while MORE is set, and may not exceed 65,535 bytes; anything else is a protocol error.
struct DatagramAssembler {
    struct Violation: Error {}
    private var endpoint: SocketEndpoint?
    private var bytes: [UInt8] = []

    /// Takes one frame's piece; returns the datagram when this piece ended it.
    mutating func take(more: Bool, endpoint newEndpoint: SocketEndpoint?, _ payload: [UInt8]) throws -> (SocketEndpoint, [UInt8])? {
        if let newEndpoint {
            guard endpoint == nil else { throw Violation() }  // a datagram was still open
            endpoint = newEndpoint
        } else if endpoint == nil {
            throw Violation()  // a continuation nothing announced
        }
        bytes += payload
        guard bytes.count <= FrameEncoder.maximumDatagram else { throw Violation() }
        if more { return nil }
        defer { (endpoint, bytes) = (nil, []) }
        return (endpoint!, bytes)
    }
}
