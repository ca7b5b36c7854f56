import SluiceProxyProtocol
import SluiceTestSupport
import SluiceWire
import XCTest

/// Byte fixtures for both versions (the examples and limits of HAProxy's proxy-protocol.txt), every
/// proper prefix waiting for more, and each way a header can be wrong.
final class ProxyHeaderTests: XCTestCase {
    private func decode(_ bytes: [UInt8]) throws -> (header: ProxyHeader, length: Int)? {
        try bytes.withUnsafeBytes { buffer throws(ProxyHeaderError) in try ProxyHeader.decode(buffer) }
    }

    private func decodeError(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> ProxyHeaderError? {
        do {
            let decoded = try decode(bytes)
            XCTFail("decoded \(String(describing: decoded)), expected an error", file: file, line: line)
            return nil
        } catch let error as ProxyHeaderError {
            return error
        } catch {
            XCTFail("\(error)", file: file, line: line)
            return nil
        }
    }

    private func endpoint(_ text: String) -> SocketEndpoint { SocketEndpoint(text)! }

    /// Asserts `bytes` (followed by `trailer`, which must be left alone) decode to `expected`, and
    /// that every proper prefix asks for more.
    private func assertDecodes(_ bytes: [UInt8], _ expected: ProxyHeader, trailer: [UInt8] = [0x00, 0x7D],
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let decoded = try XCTUnwrap(try decode(bytes + trailer), "needs more", file: file, line: line)
        XCTAssertEqual(decoded.header, expected, file: file, line: line)
        XCTAssertEqual(decoded.length, bytes.count, "the header's length", file: file, line: line)
        for cut in 0..<bytes.count {
            XCTAssertNil(try decode(Array(bytes[0..<cut])), "a prefix of \(cut) bytes decoded", file: file, line: line)
        }
    }

    // MARK: version 1

    func testV1TCP4() throws {
        let line = Array("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n".utf8)
        let expected = ProxyHeader(version: .v1, addresses: .init(source: endpoint("192.168.0.1:56324"), destination: endpoint("192.168.0.11:443")))
        try assertDecodes(line, expected, trailer: Array("GET / HTTP/1.1\r\n".utf8))
        XCTAssertEqual(expected.encoded(), line)
    }

    func testV1TCP6() throws {
        let line = Array("PROXY TCP6 fd10::1 fd10::2 40000 7000\r\n".utf8)
        let expected = ProxyHeader(version: .v1, addresses: .init(source: endpoint("[fd10::1]:40000"), destination: endpoint("[fd10::2]:7000")))
        try assertDecodes(line, expected)
        XCTAssertEqual(expected.encoded(), line)
        // The longest line the specification allows, 104 bytes, with every IPv6 group written out.
        let full = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
        let longest = Array("PROXY TCP6 \(full) \(full) 65535 65535\r\n".utf8)
        XCTAssertEqual(longest.count, 104)
        XCTAssertEqual(try decode(longest)?.length, 104)
    }

    func testV1Unknown() throws {
        try assertDecodes(Array("PROXY UNKNOWN\r\n".utf8), ProxyHeader(version: .v1, addresses: nil))
        // The rest of an UNKNOWN line is ignored, up to the 107-byte worst case.
        let full = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
        let worst = Array("PROXY UNKNOWN \(full) \(full) 65535 65535\r\n".utf8)
        XCTAssertEqual(worst.count, 107)
        XCTAssertEqual(try decode(worst)?.header, ProxyHeader(version: .v1, addresses: nil))
        XCTAssertEqual(ProxyHeader(version: .v1, addresses: nil).encoded(), Array("PROXY UNKNOWN\r\n".utf8))
    }

    func testV1Malformed() {
        let cases: [(String, String)] = [
            ("PROXY TCP4 192.168.0.1  192.168.0.11 56324 443\r\n", "two spaces"),
            ("PROXY TCP4 192.168.0.1 192.168.0.11 56324\r\n", "a port missing"),
            ("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443 1\r\n", "a field too many"),
            ("PROXY TCP4 fd10::1 192.168.0.11 56324 443\r\n", "IPv6 under TCP4"),
            ("PROXY TCP6 192.168.0.1 fd10::2 56324 443\r\n", "IPv4 under TCP6"),
            ("PROXY TCP4 192.168.0.01 192.168.0.11 56324 443\r\n", "a leading zero in an address"),
            ("PROXY TCP4 192.168.0.1 192.168.0.11 056324 443\r\n", "a leading zero in a port"),
            ("PROXY TCP4 192.168.0.1 192.168.0.11 65536 443\r\n", "a port over 65535"),
            ("PROXY TCP4 192.168.0.1 192.168.0.11 -1 443\r\n", "a negative port"),
            ("PROXY UDP4 192.168.0.1 192.168.0.11 56324 443\r\n", "an unknown protocol"),
            ("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\n", "LF alone"),
            ("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\rX", "CR alone"),
            ("PROXY TCP4 host.example 192.168.0.11 56324 443\r\n", "a name, not an address"),
            ("PROXY \r\n", "nothing after PROXY"),
        ]
        for (text, why) in cases {
            guard let error = decodeError(Array(text.utf8)) else { continue }
            if case .badLine = error { continue }
            XCTFail("\(why): \(error), expected badLine")
        }
        XCTAssertEqual(decodeError(Array("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\u{7F}\r\n".utf8)), .badLine("bytes that are not printable ASCII"))
        // No CRLF within 107 bytes.
        XCTAssertEqual(decodeError(Array(("PROXY UNKNOWN " + String(repeating: "x", count: 93)).utf8)), .lineTooLong)
        XCTAssertEqual(decodeError(Array(("PROXY UNKNOWN " + String(repeating: "x", count: 92) + "\r\n").utf8)), .lineTooLong)
        XCTAssertNil(try decode(Array(("PROXY UNKNOWN " + String(repeating: "x", count: 92)).utf8)), "106 bytes without CRLF may still end")
    }

    // MARK: version 2

    /// TCP over IPv4 from 10.10.0.1:43210 to 10.10.0.2:7000, as HAProxy's `send-proxy-v2` writes it.
    static let v2IPv4: [UInt8] = [
        0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A,  // signature
        0x21, 0x11, 0x00, 0x0C,  // version 2, PROXY; AF_INET, STREAM; 12 bytes follow
        10, 10, 0, 1, 10, 10, 0, 2, 0xA8, 0xCA, 0x1B, 0x58,
    ]

    func testV2IPv4() throws {
        let expected = ProxyHeader(version: .v2, addresses: .init(source: endpoint("10.10.0.1:43210"), destination: endpoint("10.10.0.2:7000")))
        try assertDecodes(Self.v2IPv4, expected)
        XCTAssertEqual(expected.encoded(), Self.v2IPv4)
    }

    /// What Debian's HAProxy 2.6.12 wrote with `server … send-proxy-v2` for a connection from
    /// 127.0.0.1:43210 to its `bind 127.0.0.1:17000` (captured on loopback): addresses, no TLVs.
    func testV2AsHAProxyWritesIt() throws {
        let captured = hex("0d0a0d0a000d0a515549540a2111000c7f0000017f000001a8ca4268")
        let expected = ProxyHeader(version: .v2, addresses: .init(source: endpoint("127.0.0.1:43210"), destination: endpoint("127.0.0.1:17000")))
        try assertDecodes(captured, expected, trailer: Array("X".utf8))
        XCTAssertEqual(expected.encoded(), captured)
    }

    func testV2IPv6() throws {
        var bytes = Array(Self.v2IPv4[0..<12]) + [0x21, 0x21, 0x00, 0x24]
        bytes += IPAddress("fd10::1")!.bytes + IPAddress("fd10::2")!.bytes + [0x9C, 0x40, 0x1B, 0x58]
        let expected = ProxyHeader(version: .v2, addresses: .init(source: endpoint("[fd10::1]:40000"), destination: endpoint("[fd10::2]:7000")))
        try assertDecodes(bytes, expected)
        XCTAssertEqual(expected.encoded(), bytes)
    }

    func testV2TLVsAreSkipped() throws {
        // Addresses, then a PP2_TYPE_AUTHORITY TLV ("relay") and a NOOP: the length covers them all.
        var bytes = Array(Self.v2IPv4[0..<14]) + [0x00, 0x0C + 8 + 3]
        bytes += Array(Self.v2IPv4[16...]) + [0x02, 0x00, 0x05] + Array("relay".utf8) + [0x04, 0x00, 0x00]
        let decoded = try XCTUnwrap(try decode(bytes + [0xAA]))
        XCTAssertEqual(decoded.length, bytes.count)
        XCTAssertEqual(decoded.header.addresses?.source, endpoint("10.10.0.1:43210"))
    }

    func testV2Local() throws {
        // A health check: LOCAL, AF_UNSPEC, no addresses.
        let local = Array(Self.v2IPv4[0..<12]) + [0x20, 0x00, 0x00, 0x00]
        try assertDecodes(local, ProxyHeader(version: .v2, command: .local, addresses: nil))
        XCTAssertEqual(ProxyHeader(version: .v2, command: .local, addresses: nil).encoded(), local)
        // LOCAL with an address block anyway: skipped, and the addresses ignored.
        let withAddresses = Array(Self.v2IPv4[0..<12]) + [0x20] + Array(Self.v2IPv4[13...])
        XCTAssertEqual(try decode(withAddresses)?.header, ProxyHeader(version: .v2, command: .local, addresses: nil))
        XCTAssertEqual(try decode(withAddresses)?.length, 28)
    }

    func testV2FamiliesWithoutAClientFallBackToTheConnection() throws {
        let base = Array(Self.v2IPv4[0..<12]) + [0x21]
        // PROXY with AF_UNSPEC; UDP over IPv4; UNIX stream (216 bytes of paths).
        XCTAssertEqual(try decode(base + [0x00, 0x00, 0x00])?.header, ProxyHeader(version: .v2, addresses: nil))
        XCTAssertEqual(try decode(base + [0x12, 0x00, 0x0C] + Array(Self.v2IPv4[16...]))?.header, ProxyHeader(version: .v2, addresses: nil))
        XCTAssertEqual(try decode(base + [0x31, 0x00, 0xD8] + [UInt8](repeating: 0x41, count: 216))?.length, 232)
        // An IPv4 family with an unspecified transport: no ports to speak of, so no client either.
        XCTAssertEqual(try decode(base + [0x10, 0x00, 0x0C] + Array(Self.v2IPv4[16...]))?.header, ProxyHeader(version: .v2, addresses: nil))
    }

    func testV2Malformed() {
        let sig = Array(Self.v2IPv4[0..<12])
        XCTAssertEqual(decodeError(sig + [0x11]), .badVersion(1))
        XCTAssertEqual(decodeError(sig + [0x31, 0x11, 0x00, 0x0C]), .badVersion(3))
        XCTAssertEqual(decodeError(sig + [0x22]), .badCommand(2))
        XCTAssertEqual(decodeError(sig + [0x21, 0x41]), .badFamily(0x41))
        XCTAssertEqual(decodeError(sig + [0x21, 0x13]), .badFamily(0x13))
        XCTAssertEqual(decodeError(sig + [0x21, 0x11, 0x00, 0x08] + [UInt8](repeating: 1, count: 8)), .addressesTooShort(family: 0x11, length: 8))
        XCTAssertEqual(decodeError(sig + [0x21, 0x21, 0x00, 0x0C] + Array(Self.v2IPv4[16...])), .addressesTooShort(family: 0x21, length: 12))
        XCTAssertEqual(decodeError(sig + [0x21, 0x11, 0xFF, 0xFF]), .tooLong(16 + 65535))
        // A header up to the limit is read; one byte more is refused before any of it arrives.
        XCTAssertNil(try decode(sig + [0x21, 0x11, 0x08, 0x00]))
        XCTAssertEqual(decodeError(sig + [0x21, 0x11, 0x08, 0x01]), .tooLong(ProxyHeader.maximumLength + 1))
        // A signature broken in its fifth byte (the NUL).
        var broken = sig
        broken[4] = 0x20
        XCTAssertEqual(decodeError(broken), .notProxyProtocol)
    }

    // MARK: neither

    func testNotAHeaderFailsAtTheFirstWrongByte() {
        XCTAssertEqual(decodeError([0x01]), .notProxyProtocol, "a Sluice message 1 starts with an ephemeral key")
        XCTAssertEqual(decodeError(Array("GET ".utf8)), .notProxyProtocol)
        XCTAssertEqual(decodeError(Array("PROXX".utf8)), .notProxyProtocol)
        XCTAssertEqual(decodeError(Array("PROXY\r\n".utf8)), .notProxyProtocol, "PROXY must be followed by a space")
        XCTAssertEqual(decodeError([0x0D, 0x0A, 0x0D, 0x0B]), .notProxyProtocol)
        XCTAssertNil(try decode([]))
    }

    func testErrorsReadAsSentences() {
        XCTAssertEqual("\(ProxyHeaderError.badCommand(2))", "PROXY version 2 command 2 (0 LOCAL, 1 PROXY)")
        XCTAssertTrue("\(ProxyHeaderError.notProxyProtocol)".contains("no PROXY protocol header"))
    }
}
