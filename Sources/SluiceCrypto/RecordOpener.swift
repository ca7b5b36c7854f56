import SluiceIO

/// Reads one direction's records out of the byte stream a TCP socket delivers in arbitrary pieces
/// (docs/protocol.md §2; the layout is explained on `RecordFormat`).
///
/// Feed bytes with `feed` (a copy) or `receive` (read straight into the opener's buffer, e.g. with
/// `read(2)`), then call `nextRecord()` until it returns nil. Records are decrypted in place in the
/// opener's own buffer, so a record costs no allocation and no copy beyond the socket read.
/// One opener per carrier direction, built from `TransportKeys.receiving`, confined to the thread
/// that reads the carrier. After any error the opener is dead and repeats that error: the protocol
/// closes the carrier, since a record stream cannot resynchronise.
public final class RecordOpener {
    private var schedule: RecordKeySchedule
    private let buffer: ByteQueue
    /// The current record's decrypted length, once its two length bytes have arrived.
    private var pendingLength: Int?
    private var failure: RecordError?

    /// - Parameters:
    ///   - key: this end's receiving key.
    ///   - rekeyInterval: records per key; the protocol fixes 2^20, tests use small values.
    public convenience init(key: SymmetricKey, rekeyInterval: UInt64 = RecordFormat.defaultRekeyInterval) {
        self.init(key: key, rekeyInterval: rekeyInterval, startingCounter: 0)
    }

    /// - Parameter bufferCapacity: the buffer's size, at least `bufferCapacity` (the default); a
    ///   larger one moves less (see `bufferCapacity`) and lets a read take more.
    public convenience init(key: SymmetricKey, rekeyInterval: UInt64 = RecordFormat.defaultRekeyInterval, bufferCapacity: Int) {
        self.init(key: key, rekeyInterval: rekeyInterval, startingCounter: 0, bufferCapacity: bufferCapacity)
    }

    /// Starts at an arbitrary record number: only for tests of the counter limit.
    init(key: SymmetricKey, rekeyInterval: UInt64, startingCounter: UInt64, bufferCapacity: Int = RecordOpener.bufferCapacity) {
        precondition(bufferCapacity >= Self.bufferCapacity, "an opener's buffer holds at least \(Self.bufferCapacity) bytes")
        schedule = RecordKeySchedule(key: key, rekeyInterval: rekeyInterval, counter: startingCounter)
        buffer = ByteQueue(capacity: bufferCapacity)
    }

    /// The smallest buffer and the default, 126 KiB: the largest partial record a drained opener
    /// holds (65,536 bytes: one more completes the largest record, which is then opened) and a read
    /// of `receiveMinimum` bytes behind it, so that reading through `receive` never grows the buffer.
    /// Kept under 128 KiB with AddressSanitizer's 2 KiB redzone on top (its primary allocator serves
    /// blocks up to 128 KiB; anything larger is a fresh mmap, which made the record fuzzer slow,
    /// Fuzz/README.md). Each time reads reach the end, the partial record left over moves to the
    /// front: with this size, on a busy carrier, every read or two.
    public static let bufferCapacity = 126 * 1024

    /// Bytes the buffer has moved to make room (`ByteQueue.movedByteCount`).
    public var movedByteCount: Int { buffer.movedByteCount }

    /// The room `receive` offers at least by default (62 KiB): what the buffer has left behind the
    /// largest partial record.
    public static let receiveMinimum = bufferCapacity - (RecordFormat.maxRecordLength - 1)

    /// The bytes the buffer holds now: `bufferCapacity` unless `feed` was given more than that.
    var bufferCapacityNow: Int { buffer.capacity }

    /// The number of the next record, i.e. how many this opener has opened (from 0).
    public var counter: UInt64 { schedule.counter }

    /// Received bytes not yet returned as records (at most one partial record after draining).
    public var bufferedByteCount: Int { buffer.count }

    /// Adds a copy of received bytes. Drain with `nextRecord()` after each feed: the buffer grows to
    /// hold whatever is fed and not yet opened.
    public func feed(_ bytes: UnsafeRawBufferPointer) { buffer.append(bytes) }

    /// Adds a copy of received bytes.
    public func feed(_ bytes: [UInt8]) { buffer.append(bytes) }

    /// Lets `body` read up to the given region's size straight into the opener's buffer and
    /// returns what `body` returned (bytes written, or ≤ 0 for EOF/error, which commits nothing).
    /// The region has at least `minimum` bytes; with the default, and `nextRecord()` drained after
    /// each call, the buffer never grows.
    @discardableResult
    public func receive<E: Error>(minimum: Int = RecordOpener.receiveMinimum,
                                  _ body: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) -> Int {
        try buffer.write(minimum: minimum, body)
    }

    /// The next complete record's plaintext, or nil when more bytes are needed.
    ///
    /// The returned bytes live in the opener's buffer and stay valid until the next `receive` or
    /// `feed` (only those move or overwrite what the buffer holds): every record opened since then is
    /// still in place.
    /// - Throws: `badLength` for a decoded length of 0 or above 65519, `authenticationFailed`,
    ///   `counterExhausted`; each is final.
    public func nextRecord() throws(RecordError) -> UnsafeRawBufferPointer? {
        if let failure { throw failure }
        let available = buffer.count
        guard available >= RecordFormat.lengthFieldSize else { return nil }
        let base = buffer.mutableReadableBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)

        let length: Int
        if let pendingLength {
            length = pendingLength
        } else {
            do {
                try schedule.checkCounter()
            } catch {
                try fail(error)
            }
            let masked = UInt16(base[0]) << 8 | UInt16(base[1])
            length = Int(masked ^ schedule.lengthMask())
            guard length >= 1, length <= RecordFormat.maxPlaintextLength else { try fail(.badLength(length)) }
            pendingLength = length
        }
        let total = RecordFormat.recordLength(plaintextLength: length)
        guard available >= total else { return nil }

        let ciphertext = base + RecordFormat.lengthFieldSize
        guard schedule.aead.open(ciphertext, ciphertext: ciphertext, length: length, tag: ciphertext + length,
                                 aad: base, aadLength: RecordFormat.lengthFieldSize, nonce: schedule.nonce)
        else { try fail(.authenticationFailed) }

        buffer.consume(total)
        pendingLength = nil
        schedule.advance()
        return UnsafeRawBufferPointer(start: ciphertext, count: length)
    }

    /// Records the first error for good and throws it.
    private func fail(_ error: RecordError) throws(RecordError) -> Never {
        failure = error
        buffer.removeAll()
        throw error
    }
}
