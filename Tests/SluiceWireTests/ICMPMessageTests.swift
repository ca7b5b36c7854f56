import XCTest

@testable import SluiceWire

final class ICMPMessageTests: XCTestCase {
    func testDecodeIPv4Echo() throws {
        try Fixture.ipv4EchoRequest.withUnsafeBytes { buffer in
            let ip = try IPv4Packet(validating: buffer)
            let icmp = try ICMPv4Message(validating: ip.payload)
            XCTAssertEqual(icmp.type, 8)
            XCTAssertEqual(icmp.code, 0)
            XCTAssertEqual(icmp.checksum, 0xA8B0)
            XCTAssertEqual(icmp.identifier, 0x1234)
            XCTAssertEqual(icmp.sequenceNumber, 1)
            XCTAssertEqual(icmp.rest, 0x1234_0001)
            XCTAssertTrue(icmp.isEchoRequest)
            XCTAssertFalse(icmp.isError)
            XCTAssertEqual(Array(icmp.body), Array("sluice ping".utf8))
            XCTAssertTrue(icmp.verifyChecksum())
            XCTAssertEqual(ICMPHeader(icmp), ICMPHeader(echoType: 8, identifier: 0x1234, sequenceNumber: 1))
        }
    }

    func testDecodeIPv6EchoAfterExtensionHeader() throws {
        try Fixture.ipv6EchoRequest.withUnsafeBytes { buffer in
            let ip = try IPv6Packet(validating: buffer)
            XCTAssertEqual(ip.transportProtocol, .icmpv6)
            XCTAssertEqual(ip.transportOffset, 48)
            let icmp = try ICMPv6Message(validating: ip.transport)
            XCTAssertEqual(icmp.type, 128)
            XCTAssertEqual(icmp.identifier, 0xABCD)
            XCTAssertEqual(icmp.sequenceNumber, 7)
            XCTAssertTrue(icmp.isEchoRequest)
            XCTAssertTrue(icmp.verifyChecksum(source: ip.source, destination: ip.destination))
            XCTAssertFalse(icmp.verifyChecksum(source: ip.destination, destination: .v6(0, 1)))
        }
    }

    func testDecodeErrors() throws {
        try Fixture.ipv4FragmentationNeeded.withUnsafeBytes { buffer in
            let icmp = try ICMPv4Message(validating: try IPv4Packet(validating: buffer).payload)
            XCTAssertTrue(icmp.isError)
            XCTAssertEqual(icmp.nextHopMTU, 1400)
            XCTAssertEqual(Array(icmp.body), Fixture.ipv4UDP)
            XCTAssertTrue(icmp.verifyChecksum())
        }
        try Fixture.ipv6PacketTooBig.withUnsafeBytes { buffer in
            let ip = try IPv6Packet(validating: buffer)
            let icmp = try ICMPv6Message(validating: ip.transport)
            XCTAssertTrue(icmp.isError)
            XCTAssertEqual(icmp.mtu, 1280)
            XCTAssertEqual(Array(icmp.body), Fixture.ipv6UDP)
            XCTAssertTrue(icmp.verifyChecksum(source: ip.source, destination: ip.destination))
        }
    }

    func testTruncatedAtEveryLength() {
        let message = Array(Fixture.ipv4EchoRequest[20...])
        message.withUnsafeBytes { buffer in
            for length in 0...buffer.count {
                let cut = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
                if length < 8 {
                    assertThrows(.truncated(.icmp)) { try ICMPv4Message(validating: cut) }
                    assertThrows(.truncated(.icmpv6)) { try ICMPv6Message(validating: cut) }
                } else {
                    XCTAssertEqual(try? ICMPv4Message(validating: cut).body.count, length - 8)
                    XCTAssertEqual(try? ICMPv6Message(validating: cut).body.count, length - 8)
                }
            }
        }
    }

    func testHeaderEmitReproducesFixtures() {
        var v4 = Array(Fixture.ipv4EchoReply[20...])
        for i in 0..<8 { v4[i] = 0xEE }
        v4.withUnsafeMutableBytes { ICMPHeader(echoType: 0, identifier: 0x1234, sequenceNumber: 1).emit(into: $0) }
        XCTAssertEqual(v4, Array(Fixture.ipv4EchoReply[20...]))

        var v6 = Array(Fixture.ipv6EchoReply[40...])
        for i in 0..<8 { v6[i] = 0xEE }
        v6.withUnsafeMutableBytes {
            ICMPHeader(echoType: 129, identifier: 0xABCD, sequenceNumber: 7)
                .emit(into: $0, source: IPAddress("2001:db8::1")!, destination: IPAddress("fd00::2")!)
        }
        XCTAssertEqual(v6, Array(Fixture.ipv6EchoReply[40...]))
    }

    func testTypeTables() {
        XCTAssertEqual((0...255).filter { ICMPv4Type.isError(UInt8($0)) }, [3, 4, 5, 11, 12])
        XCTAssertEqual((0...255).filter { ICMPv6Type.isError(UInt8($0)) }, Array(0..<128))
    }
}
