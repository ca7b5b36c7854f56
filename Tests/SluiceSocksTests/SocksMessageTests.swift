import SluiceSocks
import SluiceTestSupport
import SluiceWire
import XCTest

/// Byte fixtures for every SOCKS5 message (RFC 1928, RFC 1929), both ways; every proper prefix of a
/// fixture must decode as "need more", never as an error or a message; impossible values are errors.
final class SocksMessageTests: XCTestCase {
    private let v4 = SocksAddress(host: .ip(IPAddress("10.20.0.2")!), port: 8080)
    private let v6 = SocksAddress(host: .ip(IPAddress("fd20::2")!), port: 443)
    private let domain = SocksAddress(host: .domain(Array("example.test".utf8)), port: 80)

    func testRequestFixtures() throws {
        let cases: [(SocksRequest, String)] = [
            (SocksRequest(command: .connect, address: v4), "05 01 00 01 0a140002 1f90"),
            (SocksRequest(command: .connect, address: v6), "05 01 00 04 fd200000000000000000000000000002 01bb"),
            (SocksRequest(command: .connect, address: domain), "05 01 00 03 0c 6578616d706c652e74657374 0050"),
            (SocksRequest(command: .udpAssociate, address: .unspecifiedIPv4), "05 03 00 01 00000000 0000"),
            (SocksRequest(command: .bind, address: v4), "05 02 00 01 0a140002 1f90"),
        ]
        for (request, text) in cases {
            let bytes = hex(text)
            XCTAssertEqual(try request.encoded(), bytes, text)
            let decoded = try bytes.withUnsafeBytes { try SocksRequest.decode($0) }
            XCTAssertEqual(decoded?.value, request, text)
            XCTAssertEqual(decoded?.length, bytes.count, text)
            try assertPrefixesWait(bytes) { try SocksRequest.decode($0) != nil }
            // Bytes after the message are the caller's: decoding takes only its own.
            XCTAssertEqual(try (bytes + [0xAB]).withUnsafeBytes { try SocksRequest.decode($0) }?.length, bytes.count)
        }
    }

    func testReplyFixtures() throws {
        let cases: [(SocksReply, String)] = [
            (SocksReply(code: .succeeded, bound: v4), "05 00 00 01 0a140002 1f90"),
            (SocksReply(code: .connectionRefused), "05 05 00 01 00000000 0000"),
            (SocksReply(code: .hostUnreachable, bound: v6), "05 04 00 04 fd200000000000000000000000000002 01bb"),
            (SocksReply(code: SocksReplyCode(rawValue: 0x42), bound: domain), "05 42 00 03 0c 6578616d706c652e74657374 0050"),
        ]
        for (reply, text) in cases {
            let bytes = hex(text)
            XCTAssertEqual(try reply.encoded(), bytes, text)
            XCTAssertEqual(try bytes.withUnsafeBytes { try SocksReply.decode($0) }?.value, reply, text)
            try assertPrefixesWait(bytes) { try SocksReply.decode($0) != nil }
        }
        XCTAssertEqual(SocksReplyCode.connectionRefused.description, "connection refused")
        XCTAssertEqual(SocksReplyCode(rawValue: 9).description, "unassigned reply code 9")
    }

    func testGreetingMethodSelectionAndPasswordFixtures() throws {
        let greeting = SocksGreeting(methods: [0, 2])
        XCTAssertEqual(try greeting.encoded(), hex("05 02 00 02"))
        XCTAssertEqual(try hex("05 02 00 02").withUnsafeBytes { try SocksGreeting.decode($0) }?.value, greeting)
        try assertPrefixesWait(hex("05 02 00 02")) { try SocksGreeting.decode($0) != nil }

        XCTAssertEqual(SocksMethodSelection(method: 2).encoded, hex("05 02"))
        XCTAssertEqual(try hex("05 ff").withUnsafeBytes { try SocksMethodSelection.decode($0) }?.value.method, 0xFF)

        let auth = SocksPasswordRequest(username: Array("alice".utf8), password: Array("s3cret".utf8))
        let authBytes = hex("01 05 616c696365 06 733363726574")
        XCTAssertEqual(try auth.encoded(), authBytes)
        XCTAssertEqual(try authBytes.withUnsafeBytes { try SocksPasswordRequest.decode($0) }?.value, auth)
        try assertPrefixesWait(authBytes) { try SocksPasswordRequest.decode($0) != nil }
        XCTAssertEqual(SocksPasswordReply.success.encoded, hex("01 00"))
        XCTAssertEqual(try hex("01 01").withUnsafeBytes { try SocksPasswordReply.decode($0) }?.value.succeeded, false)
    }

    func testUDPHeaderFixtures() throws {
        let cases: [(SocksUDPHeader, String)] = [
            (SocksUDPHeader(address: v4), "0000 00 01 0a140002 1f90"),
            (SocksUDPHeader(address: v6), "0000 00 04 fd200000000000000000000000000002 01bb"),
            (SocksUDPHeader(fragment: 1, address: domain), "0000 01 03 0c 6578616d706c652e74657374 0050"),
        ]
        for (header, text) in cases {
            let bytes = hex(text)
            XCTAssertEqual(try header.encoded(), bytes)
            XCTAssertEqual(header.encodedLength, bytes.count)
            let datagram = bytes + Array("data".utf8)
            let decoded = try datagram.withUnsafeBytes { try SocksUDPHeader.decode(datagram: $0) }
            XCTAssertEqual(decoded.value, header)
            XCTAssertEqual(Array(datagram[decoded.length...]), Array("data".utf8), "the data follows the header")
            for cut in 0..<bytes.count {
                let short = Array(bytes[0..<cut])
                XCTAssertThrowsError(try short.withUnsafeBytes { try SocksUDPHeader.decode(datagram: $0) }) {
                    XCTAssertEqual($0 as? SocksUDPHeaderError, .truncated, "\(cut) bytes of \(text)")
                }
            }
        }
        var buffer = [UInt8](repeating: 0xEE, count: 32)
        let n = buffer.withUnsafeMutableBytes { SocksUDPHeader.write(ipSource: v6, into: $0) }
        XCTAssertEqual(n.map { Array(buffer[0..<$0]) }, hex("0000 00 04 fd200000000000000000000000000002 01bb"))
        XCTAssertNil(buffer.withUnsafeMutableBytes { SocksUDPHeader.write(ipSource: v6, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<20])) },
                     "too short a buffer")
        XCTAssertNil(buffer.withUnsafeMutableBytes { SocksUDPHeader.write(ipSource: domain, into: $0) }, "only IP sources")
    }

    func testImpossibleValuesAreErrors() {
        let cases: [(String, (UnsafeRawBufferPointer) throws -> Any?, SocksError)] = [
            ("04 01 00", { try SocksGreeting.decode($0) }, .badVersion(4, expected: 5)),
            ("05 00", { try SocksGreeting.decode($0) }, .noMethods),
            ("04 00", { try SocksMethodSelection.decode($0) }, .badVersion(4, expected: 5)),
            ("05 01 00 02 0a140002 1f90", { try SocksRequest.decode($0) }, .badAddressType(2)),
            ("05 01 01 01 0a140002 1f90", { try SocksRequest.decode($0) }, .badReserved),
            ("05 09 00 01 0a140002 1f90", { try SocksRequest.decode($0) }, .badCommand(9)),
            ("05 01 00 03 00 0050", { try SocksRequest.decode($0) }, .emptyDomain),
            ("05 00 00 07", { try SocksReply.decode($0) }, .badAddressType(7)),
            ("02 05 616c696365 01 70", { try SocksPasswordRequest.decode($0) }, .badVersion(2, expected: 1)),
            ("01 00 01 70", { try SocksPasswordRequest.decode($0) }, .emptyCredential),
            ("01 01 61 00", { try SocksPasswordRequest.decode($0) }, .emptyCredential),
            ("05 00", { try SocksPasswordReply.decode($0) }, .badVersion(5, expected: 1)),
        ]
        for (text, decode, expected) in cases {
            XCTAssertThrowsError(try hex(text).withUnsafeBytes { try decode($0) }, text) {
                XCTAssertEqual($0 as? SocksError, expected, text)
            }
        }
        XCTAssertThrowsError(try hex("0001 00 01 0a140002 1f90").withUnsafeBytes { try SocksUDPHeader.decode(datagram: $0) }) {
            XCTAssertEqual($0 as? SocksUDPHeaderError, .socks(.badReserved))
        }
    }

    func testEncodingRefusesWhatLengthBytesCannotSay() {
        let long = [UInt8](repeating: 0x61, count: 256)
        XCTAssertThrowsError(try SocksRequest(command: .connect, address: SocksAddress(host: .domain(long), port: 1)).encoded()) {
            XCTAssertEqual($0 as? SocksError, .tooLong(field: "domain", length: 256))
        }
        XCTAssertThrowsError(try SocksRequest(command: .connect, address: SocksAddress(host: .domain([]), port: 1)).encoded()) {
            XCTAssertEqual($0 as? SocksError, .emptyDomain)
        }
        XCTAssertThrowsError(try SocksPasswordRequest(username: long, password: [1]).encoded())
        XCTAssertThrowsError(try SocksGreeting(methods: []).encoded())
        XCTAssertNil(SocksCredentials(username: [], password: [1]))
        XCTAssertNil(SocksCredentials(username: [1], password: long))
        XCTAssertEqual(SocksCredentials(username: Array("bob".utf8), password: Array("pw".utf8))?.description, "user bob",
                       "the password is never shown")
    }

    /// Every proper prefix of a message decodes to nil ("need more"), without an error.
    private func assertPrefixesWait(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line,
                                    _ decodes: (UnsafeRawBufferPointer) throws -> Bool) throws {
        for cut in 0..<bytes.count {
            let prefix = Array(bytes[0..<cut])
            XCTAssertFalse(try prefix.withUnsafeBytes { try decodes($0) }, "\(cut) of \(bytes.count) bytes decoded", file: file, line: line)
        }
    }
}
