import SluiceTestSupport
import XCTest

@testable import SluiceWire

/// The DNS question codec behind split DNS: fixtures, compression pointers, every way a message can
/// end early, and names as text.
final class DNSQuestionTests: XCTestCase {
    /// `dig @127.0.0.1 www.Corp.Example AAAA +nocookie` (BIND 9.18), as it left dig: ID 0xb122, RD and
    /// AD set, one question, one additional record (EDNS OPT, 1232 bytes).
    static let digQuery = hex("""
        b122 0120 0001 0000 0000 0001
        03 777777 04 436f7270 07 4578616d706c65 00  001c 0001
        00 0029 04d0 00000000 0000
        """)

    func parse(_ bytes: [UInt8]) throws -> DNSQuestion {
        try bytes.withUnsafeBytes { try DNSQuestion(parsingQuery: $0) }
    }

    func testDigQueryFixture() throws {
        let question = try parse(Self.digQuery)
        XCTAssertEqual(question.name.description, "www.corp.example", "letters lowered, as names compare")
        XCTAssertEqual(question.type, 28)
        XCTAssertEqual(question.qclass, 1)
        XCTAssertEqual(question.name, DNSName("WWW.corp.EXAMPLE."))
    }

    func testEmitParsesBack() throws {
        let question = DNSQuestion(name: DNSName("host.corp.test")!, type: 1)
        let message = question.queryMessage(id: 0x1234)
        XCTAssertEqual(message, hex("1234 0100 0001 0000 0000 0000 04686f7374 04636f7270 0474657374 00 0001 0001"))
        XCTAssertEqual(try parse(message), question)
    }

    func testRootQuestion() throws {
        let question = try parse(hex("0001 0000 0001 0000 0000 0000 00 0002 0001"))  // NS for "."
        XCTAssertEqual(question.name.labels, [])
        XCTAssertEqual(question.name.description, ".")
        XCTAssertEqual(question.type, 2)
    }

    /// A name that continues, through a pointer, in a name written earlier in the message: a second
    /// question `www` + pointer to the first question's `corp.test`.
    func testCompressionPointerToAnEarlierName() throws {
        var message = hex("0002 0100 0002 0000 0000 0000")
        message += hex("04636f7270 0474657374 00 0001 0001")  // question 1 at 12: corp.test A IN
        let second = message.count
        message += hex("03777777 c00c 001c 0001")  // question 2: www + pointer to 12, AAAA IN
        let (name, end) = try message.withUnsafeBytes { try DNSQuestion.parseName(in: $0, at: second) }
        XCTAssertEqual(name, DNSName("www.corp.test"))
        XCTAssertEqual(end, second + 6, "the name ends after its pointer, not after the bytes it points to")
        XCTAssertEqual(try parse(message).name, DNSName("corp.test"), "the first question is the one parsed")
    }

    func testPointerChainsMustLeadEarlier() throws {
        // A pointer to itself, a pointer forward, and two pieces pointing at each other.
        let header = hex("0003 0100 0001 0000 0000 0000")
        XCTAssertThrowsError(try parse(header + hex("c00c 0001 0001"))) {
            XCTAssertEqual($0 as? WireError, .badDNS(.pointerNotBackwards(from: 12, to: 12)))
        }
        XCTAssertThrowsError(try parse(header + hex("c00e 0001 0001"))) {
            XCTAssertEqual($0 as? WireError, .badDNS(.pointerNotBackwards(from: 12, to: 14)))
        }
        // 12: label "a", then a pointer back to 12: earlier than the pointer, but not earlier than
        // the piece it belongs to, so it would loop.
        XCTAssertThrowsError(try parse(header + hex("0161 c00c 0001 0001"))) {
            XCTAssertEqual($0 as? WireError, .badDNS(.pointerNotBackwards(from: 14, to: 12)))
        }
    }

    func testTruncatedAtEveryByte() throws {
        for count in 0..<Self.digQuery.count - 11 {  // the OPT record after the question is not needed
            let cut = Array(Self.digQuery.prefix(count))
            XCTAssertThrowsError(try parse(cut), "\(count) bytes") {
                XCTAssertEqual($0 as? WireError, .truncated(.dns), "\(count) bytes")
            }
        }
        XCTAssertNoThrow(try parse(Array(Self.digQuery.prefix(Self.digQuery.count - 11))))
        // A pointer cut after its first byte.
        XCTAssertThrowsError(try parse(hex("0004 0100 0001 0000 0000 0000 c0"))) {
            XCTAssertEqual($0 as? WireError, .truncated(.dns))
        }
    }

    func testResponsesAndEmptyQuestionsAreRefused() {
        var response = Self.digQuery
        response[2] |= 0x80
        XCTAssertThrowsError(try parse(response)) { XCTAssertEqual($0 as? WireError, .badDNS(.notAQuery)) }
        var none = Self.digQuery
        none[5] = 0
        XCTAssertThrowsError(try parse(none)) { XCTAssertEqual($0 as? WireError, .badDNS(.noQuestion)) }
    }

    func testLabelTypesAndLengthLimits() {
        let header = hex("0005 0100 0001 0000 0000 0000")
        for byte: UInt8 in [0x40, 0x41, 0x80, 0xbf] {
            XCTAssertThrowsError(try parse(header + [byte] + [UInt8](repeating: 0x61, count: 70))) {
                XCTAssertEqual($0 as? WireError, .badDNS(.unknownLabelType(byte)))
            }
        }
        // Four labels of 63 bytes: 4 × 64 + 1 = 257 bytes on the wire.
        var long = header
        for _ in 0..<4 { long += [63] + [UInt8](repeating: 0x61, count: 63) }
        long += hex("00 0001 0001")
        XCTAssertThrowsError(try parse(long)) { XCTAssertEqual($0 as? WireError, .badDNS(.nameTooLong)) }
        // Three of 63 and one of 61: exactly 255.
        var longest = header
        for n in [63, 63, 63, 61] { longest += [UInt8(n)] + [UInt8](repeating: 0x61, count: n) }
        longest += hex("00 0001 0001")
        XCTAssertEqual(try parse(longest).name.labels.count, 4)
    }

    func testNamesAsText() {
        XCTAssertEqual(DNSName("Corp.Example")?.description, "corp.example")
        XCTAssertEqual(DNSName("corp.example."), DNSName("corp.example"))
        XCTAssertEqual(DNSName(".")?.labels, [])
        for bad in ["", "..", ".corp", "a..b", "bad name", "ünï.test", String(repeating: "a", count: 64) + ".test",
                    Array(repeating: String(repeating: "a", count: 63), count: 4).joined(separator: ".")] {
            XCTAssertNil(DNSName(bad), bad)
        }
        XCTAssertNotNil(DNSName(String(repeating: "a", count: 63) + ".test"))
        // Bytes a label may hold but text cannot show plainly.
        XCTAssertEqual(DNSName(checkedLabels: [[0x61, 0x2e, 0x00], [0x5c]]).description, "a\\046\\000.\\092")
    }

    func testWithin() {
        let domain = DNSName("corp.example")!
        XCTAssertTrue(DNSName("corp.example")!.isWithin(domain))
        XCTAssertTrue(DNSName("WWW.Corp.Example")!.isWithin(domain))
        XCTAssertTrue(DNSName("a.b.corp.example")!.isWithin(domain))
        XCTAssertFalse(DNSName("notcorp.example")!.isWithin(domain), "labels, not string suffixes")
        XCTAssertFalse(DNSName("example")!.isWithin(domain))
        XCTAssertFalse(DNSName("corp.example.org")!.isWithin(domain))
        XCTAssertTrue(DNSName("anything")!.isWithin(DNSName(".")!))
    }
}
