@testable import SluiceStack
import SluiceWire
import SluiceTestSupport
import XCTest

/// Packets handed to the stack in a `PacketBuffer`: lwIP keeps them in that memory, without a copy.
final class TCPStackAdoptionTests: StackTestCase {
    /// `packet` in a new buffer after `headroom` bytes of a flow's own header.
    private func buffer(_ packet: [UInt8], headroom: Int = 10) -> PacketBuffer {
        let storage = PacketBuffer.allocate(capacity: headroom + packet.count)
        UnsafeMutableRawBufferPointer(rebasing: storage[headroom...]).copyBytes(from: packet)
        return PacketBuffer(owning: storage, packetRange: headroom..<headroom + packet.count)
    }

    private func input(_ buffer: consuming PacketBuffer) throws {
        let summary = try PacketSummary(parsing: UnsafeRawBufferPointer(buffer.packet))
        stack.input(buffer, summary: summary)
    }

    /// Everything `flow` has, with the address each chunk was read from.
    private func readAll(_ flow: TCPFlow) -> (bytes: [UInt8], chunks: [UnsafeRawPointer]) {
        var bytes: [UInt8] = [], chunks: [UnsafeRawPointer] = []
        flow.read { chunk in
            bytes += chunk
            chunks.append(chunk.baseAddress!)
            return chunk.count
        }
        return (bytes, chunks)
    }

    func testTheFlowReadsTheBytesFromTheBufferItself() throws {
        for (application, destination) in [("10.0.0.2:\(freshPort())", "203.0.113.7:443"), ("[fd00::2]:\(freshPort())", "[2001:db8::7]:443")] {
            var app = Application(from: application, to: destination)
            let flow = try harness.connect(&app)
            let payload = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let packet = buffer(app.data(payload))
            let storage = UnsafeRawBufferPointer(packet.storage)
            try input(packet)

            let (bytes, chunks) = readAll(flow)
            XCTAssertEqual(bytes, payload)
            XCTAssertEqual(chunks.count, 1)
            let start = try XCTUnwrap(chunks.first)
            XCTAssertTrue(start >= storage.baseAddress! && start < storage.baseAddress! + storage.count,
                          "the flow read the payload where it was put, not from a copy")
            flow.abort()
        }
    }

    /// lwIP keeps a segment that arrives ahead of a gap (its out-of-sequence queue) in the buffer
    /// it came in, and delivers it once the gap is filled.
    func testASegmentAheadOfAGapIsKeptUntilTheGapIsFilled() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        let payload = (0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) }
        let first = app.data(Array(payload[0..<12_000]))
        let second = app.data(Array(payload[12_000...]))
        try input(buffer(second))
        XCTAssertEqual(readAll(flow).bytes, [], "nothing in order yet")
        try input(buffer(first))
        XCTAssertEqual(readAll(flow).bytes, payload)
        flow.abort()
    }

    /// Bytes the flow does not read yet stay in lwIP's pbufs, which are the buffers.
    func testUnreadBytesStayIntactUntilRead() throws {
        var app = Application(from: "[fd00::2]:\(freshPort())", to: "[2001:db8::7]:443")
        let flow = try harness.connect(&app)
        var expected: [UInt8] = []
        for chunk in 0..<3 {
            let payload = [UInt8](repeating: UInt8(chunk + 1), count: 16_000)
            expected += payload
            try input(buffer(app.data(payload)))
        }
        XCTAssertEqual(readAll(flow).bytes, expected)
        flow.abort()
    }

    /// A SYN in a buffer is held as a copy until the upstream answers; the buffer is freed with it.
    func testASYNInABufferIsHeldAndAdmittedLater() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        try input(buffer(app.syn()))
        XCTAssertEqual(delegate.syns, [app.key])
        XCTAssertEqual(tun.take(), [], "no answer before the upstream's")
        stack.admit(app.key)
        let synAck = try XCTUnwrap(tun.takeSegments().first { $0.flags == [.syn, .ack] })
        XCTAssertEqual(synAck.acknowledgmentNumber, app.seq)
    }

    func testABufferToLoopbackIsDroppedAndCounted() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "127.0.0.1:80")
        try input(buffer(app.syn()))
        XCTAssertEqual(stack.counters.droppedLoopback, 1)
        XCTAssertEqual(delegate.syns, [])
    }
}
