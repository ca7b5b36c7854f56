import SluiceLoop
import SluiceWire
import XCTest

@testable import SluiceTunnel

/// Gathered runs (`SegmentCoalescer.holder` set, a flow that writes from pieces): the flow is handed
/// the joined headers and each segment's payload where it was emitted, every held buffer is released
/// by the flush, and what the applications get is what the copying path gives them.
final class SegmentCoalescerGatherTests: XCTestCase {
    /// Its segment builder and checksum completion.
    let builder = SegmentCoalescerTests(name: "builder", testClosure: { _ in })

    /// Hands out a token for the packet being emitted while `holding` is set, and counts.
    final class CountingHolder: OutputPacketHolder {
        var holding = true
        var held: Set<UnsafeMutableRawPointer> = []
        var holds = 0
        var current: UnsafeMutableRawPointer?

        func holdCurrentOutput() -> UnsafeMutableRawPointer? {
            guard holding, let current else { return nil }
            XCTAssertFalse(held.contains(current), "one hold per emitted packet")
            held.insert(current)
            holds += 1
            return current
        }

        func releaseHeldOutput(_ token: UnsafeMutableRawPointer) {
            XCTAssertNotNil(held.remove(token), "released once, and only what was held")
        }
    }

    /// A gathering flow that records the pieces of each gathered write, as addresses.
    final class RecordingFlow: GatheringPacketFlow {
        let format = PacketFlowFormat(batchSize: 1, maximumPacketLength: 65_535, offloads: [.checksum, .tcpSegmentation])
        var writes: [(packet: [UInt8], offload: PacketOffload)] = []
        var gatheredPieces: [[UnsafeRawPointer]] = []

        func start(on loop: EventLoop, readable: @escaping () -> Void) throws(PacketFlowError) {}
        func readPackets(into batch: PacketBatch) throws(PacketFlowError) {}
        func writePackets(_ batch: PacketBatch) throws(PacketFlowError) -> Int {
            for i in 0..<batch.count { writes.append((Array(batch.packet(i)), batch.offload(i))) }
            return batch.count
        }
        func writePacket(gathering pieces: UnsafeBufferPointer<UnsafeRawBufferPointer>, offload: PacketOffload) throws(PacketFlowError) -> Bool {
            writes.append((pieces.flatMap { Array($0) }, offload))
            gatheredPieces.append(pieces.map { $0.baseAddress! })
            return true
        }
        func stop() {}
    }

    final class Capture {
        let flow = RecordingFlow()
        let holder = CountingHolder()
        let output: PacketOutput

        init(holding: Bool = true) {
            output = PacketOutput(flow: flow, mtu: 1500)
            output.packetHolder = holder
            holder.holding = holding
        }

        /// Emits `packet` from its own stable buffer, as lwIP does from a segment's pbuf.
        func emit(_ packet: UnsafeMutableRawBufferPointer) {
            holder.current = packet.baseAddress
            output.emit(UnsafeRawBufferPointer(packet))
            holder.current = nil
        }
    }

    /// Stable copies of `packets`, freed at the end of the test.
    func buffers(_ packets: [[UInt8]]) -> [UnsafeMutableRawBufferPointer] {
        let buffers = packets.map { p -> UnsafeMutableRawBufferPointer in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: p.count, alignment: 16)
            b.copyBytes(from: p)
            return b
        }
        addTeardownBlock { buffers.forEach { $0.deallocate() } }
        return buffers
    }

    /// The same segments through the copying path (`SegmentCoalescerTests.Capture`).
    func copied(_ packets: [[UInt8]]) -> [(packet: [UInt8], offload: PacketOffload)] {
        let c = SegmentCoalescerTests.Capture()
        for p in packets { c.emit(p) }
        c.flush()
        return c.writes
    }

    func run(of count: Int, payload: Int, flags last: TCPFlags = [.ack, .psh]) -> [[UInt8]] {
        var seq: UInt32 = 1000
        return (0..<count).map { i in
            defer { seq &+= UInt32(payload) }
            return builder.segment(seq: seq, payload: [UInt8](repeating: UInt8(i & 0xFF), count: payload),
                                   flags: i == count - 1 ? last : TCPFlags.ack, ack: 7 + UInt32(i))
        }
    }

    func testARunIsWrittenFromTheSegmentsBuffersAndEveryHoldIsReleased() throws {
        let packets = run(of: 4, payload: 8192)
        let c = Capture()
        let emitted = buffers(packets)
        for b in emitted { c.emit(b) }
        XCTAssertTrue(c.flow.writes.isEmpty, "nothing is written before the flush")
        XCTAssertEqual(c.holder.held.count, 4, "each segment's buffer is held until the write")
        c.output.flush()
        XCTAssertTrue(c.holder.held.isEmpty, "the flush releases every buffer")

        XCTAssertEqual(c.flow.gatheredPieces.count, 1)
        let pieces = try XCTUnwrap(c.flow.gatheredPieces.first)
        XCTAssertEqual(pieces.count, 5, "the joined headers, then four payloads")
        for (i, b) in emitted.enumerated() {
            XCTAssertEqual(pieces[i + 1], UnsafeRawPointer(b.baseAddress! + 40), "payload \(i) is written where it was emitted, not copied")
        }
        let expected = copied(packets)
        XCTAssertEqual(c.flow.writes.map(\.packet), expected.map(\.packet), "the same bytes as the copying path")
        XCTAssertEqual(c.flow.writes.map(\.offload), expected.map(\.offload))
        _ = try builder.completed(c.flow.writes[0])
    }

    /// A packet whose buffer cannot be held (lwIP handed over a copy) ends a gathered run and goes
    /// through a batch slot; order and bytes are those of the copying path, and holds balance.
    func testAPacketThatCannotBeHeldEndsTheRunInOrder() throws {
        let packets = run(of: 6, payload: 1460)
        let c = Capture()
        for (i, b) in buffers(packets).enumerated() {
            c.holder.holding = i != 3
            c.emit(b)
        }
        c.output.flush()
        XCTAssertTrue(c.holder.held.isEmpty)
        XCTAssertEqual(c.holder.holds, 3, "the three before it; the rest join the slot run by copy")
        let expected = copied(Array(packets[0..<3])) + copied(Array(packets[3...]))
        XCTAssertEqual(c.flow.writes.map(\.packet), expected.map(\.packet))
        XCTAssertEqual(c.flow.gatheredPieces.count, 1, "the first three gathered; the fourth starts a run in a slot, which the rest join by copy")
        for write in c.flow.writes { _ = try builder.completed(write) }
    }

    /// Short segments: a gathered run ends at `maximumGatheredSegments`, well within a flow's iovecs.
    func testAGatheredRunIsBoundedInSegments() throws {
        let limit = SegmentCoalescer.maximumGatheredSegments
        let packets = run(of: limit + 6, payload: 100)
        let c = Capture()
        for b in buffers(packets) { c.emit(b) }
        c.output.flush()
        XCTAssertEqual(c.flow.gatheredPieces.map(\.count), [limit + 1, 7])
        XCTAssertTrue(c.holder.held.isEmpty)
        let all = try c.flow.writes.map { try builder.completed($0).2.length - 40 }
        XCTAssertEqual(all, [limit * 100, 6 * 100])
    }

    /// Without a holder, or with a flow that does not gather, nothing is held (the copying path).
    func testAPlainFlowIsNeverHandedAHolder() {
        let output = PacketOutput(flow: SegmentCoalescerTests.PlainFlow(), mtu: 1500)
        output.packetHolder = CountingHolder()
        XCTAssertNil(output.packetHolder)
    }
}
