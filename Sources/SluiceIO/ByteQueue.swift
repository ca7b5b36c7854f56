import Glibc

/// A growable FIFO of bytes with one contiguous readable region: the sealer appends records to it
/// and the caller writes them to a socket; the opener keeps received bytes in one.
///
/// It grows geometrically and never shrinks, so once it has reached the size a carrier needs, no
/// append allocates. Space freed at the front is reclaimed by moving the unread bytes down when the
/// tail runs out, which moves at most what is unread. A reference type, because the buffer it owns
/// must not be copied implicitly; confined to one thread (not `Sendable`).
///
/// Pointers handed out (`readableBytes`, `reserveWritable`) stay valid until the next call that
/// may add bytes (`append`, `reserveWritable`, `write`).
public final class ByteQueue {
    private var storage: UnsafeMutableRawPointer
    /// The bytes allocated.
    public private(set) var capacity: Int
    private var readIndex = 0
    private var writeIndex = 0
    /// Unread bytes moved to the front so far, to make room behind them: what a queue's size costs
    /// in copies (the carrier's record opener is sized by it).
    public private(set) var movedByteCount = 0

    /// Two of the largest carrier records (65,537 bytes each, docs/protocol.md §2): what a record
    /// queue holds at least, so the default never grows for one record in flight.
    public static let defaultCapacity = 2 * 65_537

    /// An empty queue with room for `capacity` bytes before it first grows.
    public init(capacity: Int = ByteQueue.defaultCapacity) {
        self.capacity = max(capacity, 64)
        storage = .allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { storage.deallocate() }

    /// The number of unread bytes.
    @inline(__always)
    public var count: Int { writeIndex - readIndex }

    /// True when nothing is unread.
    public var isEmpty: Bool { writeIndex == readIndex }

    /// The unread bytes, oldest first.
    @inline(__always)
    public var readableBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage + readIndex, count: count)
    }

    /// The unread bytes, writable: lets the opener decrypt in place.
    @inline(__always)
    public var mutableReadableBytes: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage + readIndex, count: count)
    }

    /// Drops the `n` oldest bytes, e.g. after `write(2)` sent them.
    @inline(__always)
    public func consume(_ n: Int) {
        precondition(n >= 0 && n <= count, "consume(\(n)) with \(count) bytes unread")
        readIndex += n
        // Rewinding an empty queue is free and keeps the common case from ever moving bytes.
        if readIndex == writeIndex { readIndex = 0; writeIndex = 0 }
    }

    /// Drops everything unread.
    public func removeAll() { readIndex = 0; writeIndex = 0 }

    /// At least `minimum` writable bytes after the unread ones; fill a prefix and `commit` it.
    public func reserveWritable(_ minimum: Int) -> UnsafeMutableRawBufferPointer {
        precondition(minimum >= 0)
        if capacity - writeIndex < minimum { makeRoom(minimum) }
        return UnsafeMutableRawBufferPointer(start: storage + writeIndex, count: capacity - writeIndex)
    }

    /// Marks `n` bytes written into the region `reserveWritable` returned as unread.
    @inline(__always)
    public func commit(_ n: Int) {
        precondition(n >= 0 && n <= capacity - writeIndex, "commit(\(n)) beyond the reserved space")
        writeIndex += n
    }

    /// Lets `body` write into at least `minimum` free bytes (for example with `read(2)`) and commits
    /// what it reports; a negative or zero result commits nothing and is returned as is.
    @discardableResult
    public func write<E: Error>(minimum: Int, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) -> Int {
        let written = try body(reserveWritable(minimum))
        if written > 0 { commit(written) }
        return written
    }

    /// Appends a copy of `bytes`.
    public func append(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        reserveWritable(bytes.count).baseAddress!.copyMemory(from: base, byteCount: bytes.count)
        writeIndex += bytes.count
    }

    /// Appends a copy of `bytes`.
    public func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Moves unread bytes to the front, or reallocates, so that `minimum` bytes fit after them.
    private func makeRoom(_ minimum: Int) {
        let unread = count
        if unread + minimum <= capacity, readIndex > 0 {
            memmove(storage, storage + readIndex, unread)
            movedByteCount += unread
        } else {
            var newCapacity = capacity
            while newCapacity < unread + minimum { newCapacity *= 2 }
            let bigger = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
            bigger.copyMemory(from: storage + readIndex, byteCount: unread)
            storage.deallocate()
            storage = bigger
            capacity = newCapacity
        }
        readIndex = 0
        writeIndex = unread
    }
}
