import SluiceIO
import SluiceTestSupport
import XCTest
@testable import SluiceCrypto

/// The opener's buffer is 126 KiB (`RecordOpener.bufferCapacity`, small enough for
/// AddressSanitizer's primary allocator): reading through `receive` with its default minimum, as
/// the carrier does, must never grow it, even with the largest partial record (65,536 bytes) left
/// over, and every record must still open.
final class RecordOpenerBufferTests: XCTestCase {
    let key = try! SymmetricKey(bytes: Array(0..<32))

    func testReceiveNeverGrowsTheBuffer() throws {
        var rng = SplitMix64(seed: 7)
        let sizes = [RecordFormat.maxPlaintextLength, RecordFormat.maxPlaintextLength, 1, 100, RecordFormat.maxPlaintextLength]
            + (0..<40).map { _ in Bool.random(using: &rng) ? RecordFormat.maxPlaintextLength : Int.random(in: 1...70_000, using: &rng) % 65_519 + 1 }
        let plaintexts = sizes.map { size in (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let sealer = RecordSealer(key: key)
        let wire = ByteQueue()
        for p in plaintexts { try sealer.seal(p, into: wire) }
        let stream = Array(wire.readableBytes)

        let opener = RecordOpener(key: key)
        // Read sizes a socket might deliver: the first leaves the largest partial record (65,536 of
        // 65,537 bytes), later ones whatever room there is, or pieces.
        let reads = [RecordFormat.maxRecordLength - 1, Int.max, 1_000, Int.max, 65_535, 17, Int.max]
        var opened: [[UInt8]] = []
        var at = 0
        var turn = 0
        while at < stream.count {
            let want = reads[turn % reads.count]
            turn += 1
            opener.receive { region in
                XCTAssertGreaterThanOrEqual(region.count, RecordOpener.receiveMinimum)
                let n = min(region.count, want, stream.count - at)
                stream.withUnsafeBytes { region.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[at..<at + n])) }
                at += n
                return n
            }
            XCTAssertEqual(opener.bufferCapacityNow, RecordOpener.bufferCapacity, "after \(at) bytes")
            while let record = try opener.nextRecord() { opened.append(Array(record)) }
        }
        XCTAssertEqual(opened, plaintexts)
        XCTAssertEqual(opener.bufferedByteCount, 0)
    }

    /// A busy carrier's reads take all the room there is and end inside a record, whose start then
    /// moves to the front: a buffer four times the smallest moves that partial record a quarter as
    /// often, and never grows either.
    func testALargerBufferMovesLessOfAStream() throws {
        let sealer = RecordSealer(key: key)
        let wire = ByteQueue()
        // Records as a download's DATA frames fill them (32 KiB and a frame header), 24 MiB in all.
        let record = [UInt8](repeating: 0x5A, count: 32 * 1024 + 9)
        for _ in 0..<768 { try sealer.seal(record, into: wire) }
        let stream = Array(wire.readableBytes)

        func moved(capacity: Int) throws -> Int {
            let opener = RecordOpener(key: key, bufferCapacity: capacity)
            var at = 0
            var opened = 0
            while at < stream.count {
                opener.receive { region in
                    // A socket holding 200 KiB: the read takes that or the room offered.
                    let n = min(region.count, 200 * 1024, stream.count - at)
                    stream.withUnsafeBytes { region.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[at..<at + n])) }
                    at += n
                    return n
                }
                XCTAssertEqual(opener.bufferCapacityNow, capacity)
                while let r = try opener.nextRecord() {
                    XCTAssertEqual(r.count, record.count)
                    opened += 1
                }
            }
            XCTAssertEqual(opened, 768)
            return opener.movedByteCount
        }
        let small = try moved(capacity: RecordOpener.bufferCapacity)
        let large = try moved(capacity: 4 * RecordOpener.bufferCapacity)
        XCTAssertGreaterThan(small, stream.count / 10, "the smallest buffer moves a partial record every read or two")
        XCTAssertLessThan(large * 3, small, "moved \(large) bytes with 504 KiB, \(small) with 126 KiB")
    }

    /// The size that keeps the buffer out of AddressSanitizer's mmap path: a block plus its 2 KiB
    /// redzone within 128 KiB, with room for the largest partial record and a 62 KiB read.
    func testBufferFitsAddressSanitizersPrimaryAllocator() {
        XCTAssertLessThanOrEqual(RecordOpener.bufferCapacity + 2048, 128 * 1024)
        XCTAssertEqual(RecordOpener.receiveMinimum + RecordFormat.maxRecordLength - 1, RecordOpener.bufferCapacity)
        XCTAssertGreaterThanOrEqual(RecordOpener.receiveMinimum, 62 * 1024)
    }
}
