import SluiceStack
import SluiceTestSupport
import SluiceWire
import XCTest

/// A segment the local kernel made (`SegmentChecksum.locallyMade`) is taken without a pass over it,
/// whatever its checksum field holds; any other segment is verified, and one that does not verify
/// is dropped — also when it follows an unverified one into the same buffer.
final class TCPStackChecksumTests: StackTestCase {
    /// The segment with its TCP checksum field replaced by the pseudo-header sum alone, as the kernel
    /// leaves it for the device (CHECKSUM_PARTIAL).
    private func partial(_ packet: [UInt8], tcpOffset: Int, source: IPAddress, destination: IPAddress) -> [UInt8] {
        var p = packet
        let pseudo = Checksum.pseudoHeaderSum(source: source, destination: destination, protocol: .tcp, length: p.count - tcpOffset)
        p[tcpOffset + 16] = UInt8(pseudo >> 8)
        p[tcpOffset + 17] = UInt8(pseudo & 0xFF)
        return p
    }

    private func input(_ packet: [UInt8], _ checksum: SegmentChecksum) {
        packet.withUnsafeBytes { bytes in
            harness.stack.input(bytes, summary: try! PacketSummary(parsing: bytes), checksum: checksum)
        }
    }

    private func readAll(_ flow: TCPFlow) -> [UInt8] {
        var read: [UInt8] = []
        _ = flow.read { chunk in
            read.append(contentsOf: chunk)
            return chunk.count
        }
        return read
    }

    func testThisBundleRoutesLwIPsChecksumThroughSluicesRoutine() {
        XCTAssertTrue(TCPStack.takesUnverifiedSegments, "Package.swift exports lwip_standard_chksum from this test bundle")
    }

    func testALocallyMadeSegmentIsTakenWithItsChecksumLeftPartial() throws {
        for (application, destination, offset) in [("10.0.0.2:\(freshPort())", "203.0.113.7:443", 20),
                                                   ("[fd00::2]:\(freshPort())", "[2001:db8::7]:443", 40)] {
            var app = Application(from: application, to: destination)
            let flow = try harness.connect(&app)
            let payload = content(3_000, seed: 9)
            let segment = partial(app.data(payload), tcpOffset: offset, source: app.key.application.address, destination: app.key.destination.address)
            input(segment, .verify)
            XCTAssertEqual(readAll(flow), [], "verified, a partial checksum does not pass")
            input(segment, .locallyMade)
            XCTAssertEqual(readAll(flow), payload, "taken unverified")

            var garbled = app.data(Array("after".utf8))
            garbled[offset + 16] ^= 0x5A
            input(garbled, .verify)
            XCTAssertEqual(readAll(flow), [], "the next segment is verified again, and a bad checksum is dropped")
            flow.abort()
        }
    }
}
