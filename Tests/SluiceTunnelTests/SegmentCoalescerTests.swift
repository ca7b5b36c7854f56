import CSluiceShims
import SluiceLoop
import SluiceWire
import XCTest

@testable import SluiceTunnel

/// Output toward a packet flow with segmentation offload: which segments join into super-packets,
/// and what the flow is handed (the metadata a TUN turns into a virtio-net header).
final class SegmentCoalescerTests: XCTestCase {
    let app = SocketEndpoint("198.18.0.1:40000")!
    let server = SocketEndpoint("10.20.0.2:80")!

    /// An IPv4 TCP segment from `server` to `app` with a valid checksum.
    func segment(seq: UInt32, payload: [UInt8], flags: TCPFlags = [.ack], from: SocketEndpoint? = nil, ack: UInt32 = 1) -> [UInt8] {
        let source = from ?? server
        var packet = [UInt8](repeating: 0, count: 40 + payload.count)
        packet.withUnsafeMutableBytes { buffer in
            IPv4Header(source: source.address, destination: app.address, protocol: .tcp, payloadLength: 20 + payload.count).emit(into: buffer)
            let tcp = UnsafeMutableRawBufferPointer(rebasing: buffer[20...])
            payload.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: tcp[20...]).copyMemory(from: $0) }
            TCPHeader(sourcePort: source.port, destinationPort: app.port, sequenceNumber: seq, acknowledgmentNumber: ack,
                      flags: flags, window: 1000).emit(into: tcp, source: source.address, destination: app.address)
        }
        return packet
    }

    /// A memory flow taking super-packets, and the output in front of it, as the engine has them.
    final class Capture {
        let flow: MemoryPacketFlow
        let output: PacketOutput
        var writes: [(packet: [UInt8], offload: PacketOffload)] = []

        init(batchSize: Int = 1, marksDataChecksumsPartial: Bool = false) {
            flow = MemoryPacketFlow(offloads: [.checksum, .tcpSegmentation], batchSize: batchSize)
            output = PacketOutput(flow: flow, mtu: 1500, marksDataChecksumsPartial: marksDataChecksumsPartial)
            flow.output = { [unowned self] in self.writes += $0 }
        }

        func emit(_ packet: [UInt8]) { packet.withUnsafeBytes { output.emit($0) } }
        func flush() { output.flush() }
    }

    /// A super-packet with its checksum completed the way the flow's other end does (parsed with
    /// every check, so a wrong checksum or length fails here).
    func completed(_ write: (packet: [UInt8], offload: PacketOffload)) throws -> (PacketOffload, [UInt8], PacketSummary) {
        var bytes = write.packet
        let partial = try XCTUnwrap(write.offload.partialChecksum, "a super-packet's checksum is partial")
        let summary = try bytes.withUnsafeMutableBytes { raw in
            XCTAssertTrue(partial.complete(in: raw))
            return try PacketSummary(parsing: UnsafeRawBufferPointer(raw), checks: .all)
        }
        return (write.offload, bytes, summary)
    }

    func testFullSizeSegmentsOfOneFlowBecomeOneGSOWrite() throws {
        let c = Capture()
        let chunks = (0..<4).map { i in [UInt8](repeating: UInt8(i + 1), count: i == 3 ? 500 : 1460) }
        var seq: UInt32 = 1000
        for (i, chunk) in chunks.enumerated() {
            segment(seq: seq, payload: chunk, flags: i == 3 ? [.ack, .psh] : [.ack], ack: 7 + UInt32(i)).withUnsafeBytes { c.output.emit($0) }
            seq &+= UInt32(chunk.count)
        }
        XCTAssertTrue(c.writes.isEmpty, "nothing is written before the flush")
        c.flush()
        XCTAssertEqual(c.writes.count, 1)
        let (offload, packet, summary) = try completed(c.writes[0])
        XCTAssertEqual(offload.tcpSegmentSize, 1460)
        XCTAssertEqual(offload.partialChecksum, .init(start: 20, fieldOffset: 16))
        XCTAssertEqual(summary.length, 40 + 3 * 1460 + 500)
        XCTAssertTrue(summary.tcpFlags.contains(.psh), "PSH of the last segment is kept")
        let tcp = try packet.withUnsafeBytes { try TCPSegment(validating: UnsafeRawBufferPointer(rebasing: $0[20...])) }
        XCTAssertEqual(tcp.sequenceNumber, 1000)
        XCTAssertEqual(tcp.acknowledgmentNumber, 10, "the newest ACK number")
        XCTAssertEqual(Array(packet[40...]), chunks.flatMap { $0 })
    }

    func testSegmentsThatMustNotJoinAreWrittenSeparately() throws {
        let c = Capture()
        let full = [UInt8](repeating: 9, count: 1460)
        segment(seq: 1, payload: full).withUnsafeBytes { c.output.emit($0) }
        segment(seq: 1461, payload: full, from: SocketEndpoint("10.20.0.3:80")!).withUnsafeBytes { c.output.emit($0) }  // another flow
        segment(seq: 5000, payload: full, from: SocketEndpoint("10.20.0.3:80")!).withUnsafeBytes { c.output.emit($0) }  // a gap
        segment(seq: 6460, payload: [], flags: [.ack, .fin], from: SocketEndpoint("10.20.0.3:80")!).withUnsafeBytes { c.output.emit($0) }
        c.flush()
        XCTAssertEqual(c.writes.count, 4)
        for write in c.writes {
            XCTAssertEqual(write.offload, .none, "single packets go without offload")
            let ok = write.packet.withUnsafeBytes { (try? PacketSummary(parsing: $0, checks: .all)) != nil }
            XCTAssertTrue(ok, "single packets are written unchanged, checksums valid")
        }
    }

    /// Where lwIP left data checksums to the output (`TCPStack.leavesDataChecksums`), every data
    /// segment leaves partial, a lone one and one that joins nothing too, and completes to a valid
    /// checksum whatever lwIP had written; a segment without data is written as lwIP made it.
    func testWithDataChecksumsLeftToTheOutputEveryDataSegmentIsPartial() throws {
        let c = Capture(marksDataChecksumsPartial: true)
        let other = SocketEndpoint("10.20.0.3:80")!
        var lone = segment(seq: 1, payload: [UInt8](repeating: 9, count: 700))
        lone[36] ^= 0xFF  // lwIP's checksum, as it is when it skipped summing the data
        var odd = segment(seq: 1, payload: [UInt8](repeating: 7, count: 300), flags: [.ack, .urg], from: other)
        odd[37] ^= 0x0F
        let fin = segment(seq: 301, payload: [], flags: [.ack, .fin], from: other)
        for packet in [lone, odd, fin] { packet.withUnsafeBytes { c.output.emit($0) } }
        c.flush()
        XCTAssertEqual(c.writes.count, 3)
        for (i, write) in c.writes.prefix(2).enumerated() {
            XCTAssertNil(write.offload.tcpSegmentSize, "\(i): alone, not cut")
            let (_, packet, summary) = try completed(write)
            XCTAssertEqual(summary.length, packet.count)
        }
        XCTAssertEqual(c.writes[2].offload, .none)
        XCTAssertEqual(c.writes[2].packet, fin)
    }

    /// With a GSO size below one MTU's worth (the first segment was short), a longer segment or one
    /// after a short one starts a new packet: the kernel cuts every GSO size bytes.
    func testBelowAnMTUsWorthTheFirstSegmentSetsTheSize() {
        let c = Capture()
        segment(seq: 1, payload: [UInt8](repeating: 1, count: 500)).withUnsafeBytes { c.output.emit($0) }
        segment(seq: 501, payload: [UInt8](repeating: 2, count: 500)).withUnsafeBytes { c.output.emit($0) }
        segment(seq: 1001, payload: [UInt8](repeating: 3, count: 100)).withUnsafeBytes { c.output.emit($0) }
        segment(seq: 1101, payload: [UInt8](repeating: 4, count: 500)).withUnsafeBytes { c.output.emit($0) }
        segment(seq: 1601, payload: [UInt8](repeating: 5, count: 1460)).withUnsafeBytes { c.output.emit($0) }
        c.flush()
        XCTAssertEqual(c.writes.map(\.packet.count), [40 + 1100, 40 + 500, 40 + 1460])
        XCTAssertEqual(c.writes[0].offload.tcpSegmentSize, 500)
    }

    /// At a full MTU's worth any contiguous segment joins, short or long: where lwIP's segments end
    /// does not matter once the kernel cuts the whole at the GSO size.
    func testAtAnMTUsWorthSegmentsOfAnyLengthJoin() {
        let c = Capture()
        segment(seq: 1, payload: [UInt8](repeating: 1, count: 1460)).withUnsafeBytes { c.output.emit($0) }
        segment(seq: 1461, payload: [UInt8](repeating: 2, count: 100)).withUnsafeBytes { c.output.emit($0) }
        segment(seq: 1561, payload: [UInt8](repeating: 3, count: 1460)).withUnsafeBytes { c.output.emit($0) }
        c.flush()
        XCTAssertEqual(c.writes.count, 1)
        XCTAssertEqual(c.writes[0].packet.count, 40 + 3020)
    }

    /// lwIP's large segments (TCPStack.largeSegments): longer than one MTU, they join into one GSO
    /// write with the MTU's GSO size; FIN on the last is kept, and nothing joins after it.
    func testLargeSegmentsJoinAndAFINEndsTheRun() throws {
        let c = Capture()
        let chunks = (0..<4).map { i in [UInt8](repeating: UInt8(0x40 + i), count: i == 3 ? 1000 : 8192) }
        var seq: UInt32 = 77
        for (i, chunk) in chunks.enumerated() {
            segment(seq: seq, payload: chunk, flags: i == 3 ? [.ack, .fin] : [.ack]).withUnsafeBytes { c.output.emit($0) }
            seq &+= UInt32(chunk.count)
        }
        segment(seq: seq &+ 1, payload: [UInt8](repeating: 9, count: 1460)).withUnsafeBytes { c.output.emit($0) }  // after FIN: alone
        c.flush()
        XCTAssertEqual(c.writes.count, 2)
        let (offload, packet, summary) = try completed(c.writes[0])
        XCTAssertEqual(offload.tcpSegmentSize, 1460, "the kernel cuts at one MTU's worth, not at lwIP's 8 KiB")
        XCTAssertEqual(summary.length, 40 + 3 * 8192 + 1000)
        XCTAssertTrue(summary.tcpFlags.contains(.fin), "FIN of the last segment is kept")
        XCTAssertEqual(Array(packet[40...]), chunks.flatMap { $0 })
    }

    /// One segment longer than the MTU, alone, is still a GSO write: written plain it would exceed the MTU.
    func testALoneLargeSegmentIsAGSOWrite() throws {
        let c = Capture()
        let payload = [UInt8](repeating: 7, count: 8192)
        segment(seq: 5, payload: payload).withUnsafeBytes { c.output.emit($0) }
        segment(seq: 5, payload: [], flags: [.ack, .rst]).withUnsafeBytes { c.output.emit($0) }  // ends it
        XCTAssertEqual(c.writes.count, 1, "with one packet a batch, the RST pushed the super-packet out")
        c.flush()
        XCTAssertEqual(c.writes.count, 2)
        let (offload, _, summary) = try completed(c.writes[0])
        XCTAssertEqual(offload.tcpSegmentSize, 1460)
        XCTAssertEqual(summary.length, 40 + 8192)
        XCTAssertEqual(c.writes[1].offload, .none, "the RST goes plain")
    }

    func testFastChecksumMatchesLwIPsAlgorithm() {
        XCTAssertEqual(sluice_checksum_self_test(), 1)
        var bytes = [UInt8](repeating: 0, count: 70_000)
        var x: UInt32 = 12345
        for i in bytes.indices { x = x &* 1_103_515_245 &+ 12345; bytes[i] = UInt8(truncatingIfNeeded: x >> 16) }
        for length in [0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 1459, 1460, 1461, 65535] {
            for start in 0..<4 {
                bytes.withUnsafeBytes {
                    XCTAssertEqual(lwip_standard_chksum($0.baseAddress! + start, Int32(length)),
                                   sluice_reference_chksum($0.baseAddress! + start, Int32(length)), "length \(length) start \(start)")
                    // lwIP returns the sum byte-swapped (lwip_htons); SluiceWire's is the plain big-endian sum.
                    let wire = Checksum.sum(UnsafeRawBufferPointer(rebasing: $0[start..<start + length]))
                    XCTAssertEqual(sluice_reference_chksum($0.baseAddress! + start, Int32(length)), wire.byteSwapped)
                }
            }
        }
        // All ones: the largest sums, where a lost carry would show.
        let ones = [UInt8](repeating: 0xFF, count: 65_536)
        for length in [65_535, 65_536, 4_097] {
            ones.withUnsafeBytes {
                XCTAssertEqual(lwip_standard_chksum($0.baseAddress!, Int32(length)),
                               sluice_reference_chksum($0.baseAddress!, Int32(length)), "0xFF × \(length)")
            }
        }
    }
}

extension SegmentCoalescerTests {
    /// A flow with segmentation offload that takes only batches (no `GatheringPacketFlow`).
    final class PlainFlow: PacketFlow {
        let format = PacketFlowFormat(batchSize: 1, maximumPacketLength: 65_535, offloads: [.checksum, .tcpSegmentation])
        func start(on loop: EventLoop, readable: @escaping () -> Void) throws(PacketFlowError) {}
        func readPackets(into batch: PacketBatch) throws(PacketFlowError) {}
        func writePackets(_ batch: PacketBatch) throws(PacketFlowError) -> Int { batch.count }
        func stop() {}
    }
}
