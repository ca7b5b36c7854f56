import SluiceStack
@testable import SluiceTunnel
import XCTest

/// Slots filled in place, and taken out of the batch with their memory.
final class PacketBatchTests: XCTestCase {
    func testATakenPacketKeepsItsMemoryAndTheSlotGetsNew() throws {
        let batch = PacketBatch(capacity: 2, maximumPacketLength: 65_535, headroom: 10)
        let big = (0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        XCTAssertTrue(big.withUnsafeBytes { batch.append($0) })
        let slot = UnsafeRawPointer(batch.framed(0).baseAddress!)
        let taken = batch.take(0)
        XCTAssertEqual(UnsafeRawPointer(taken.storage.baseAddress!), slot, "the slot's own memory, not a copy")
        XCTAssertEqual(taken.packetRange, 10..<60_010, "the packet after the flow's headroom")

        // The batch is refilled, as the next read does: new memory, the taken packet untouched.
        batch.removeAll()
        let other = [UInt8](repeating: 0xEE, count: 60_000)
        XCTAssertTrue(other.withUnsafeBytes { batch.append($0) })
        XCTAssertNotEqual(UnsafeRawPointer(batch.framed(0).baseAddress!), slot)
        XCTAssertEqual(Array(taken.packet), big)
        XCTAssertEqual(Array(batch.packet(0)), other)
    }

    func testAShortTakenPacketGivesBackWhatItDoesNotUse() throws {
        let batch = PacketBatch(capacity: 1, maximumPacketLength: 65_535, headroom: 10)
        let small = (0..<9_000).map { UInt8(truncatingIfNeeded: $0) }
        XCTAssertTrue(small.withUnsafeBytes { batch.append($0) })
        let taken = batch.take(0)
        XCTAssertEqual(taken.storage.count, 9_010, "cut to headroom and packet")
        XCTAssertEqual(Array(taken.packet), small)
    }

    func testOtherSlotsStayWhenOneIsTaken() throws {
        let batch = PacketBatch(capacity: 3, maximumPacketLength: 2_000)
        for byte: UInt8 in [1, 2, 3] { XCTAssertTrue([UInt8](repeating: byte, count: 1_500).withUnsafeBytes { batch.append($0) }) }
        let taken = batch.take(1)
        XCTAssertEqual(Array(taken.packet), [UInt8](repeating: 2, count: 1_500))
        XCTAssertEqual(Array(batch.packet(0)), [UInt8](repeating: 1, count: 1_500))
        XCTAssertEqual(Array(batch.packet(2)), [UInt8](repeating: 3, count: 1_500))
    }
}
