/// A fixed set of packet slots that a `PacketFlow` reads into and writes from, allocated once: the
/// packet path allocates nothing per packet.
///
/// Each slot holds `headroom` bytes for the flow's own header, then at most `maximumPacketLength`
/// bytes of IP packet, and the packet's `PacketOffload`. Fill a slot in place with `nextSlot` and
/// `commit(length:offload:)`, or copy a packet in with `append`. Loop-confined, like the engine.
public final class PacketBatch {
    public let capacity: Int
    public let headroom: Int
    public let maximumPacketLength: Int
    public private(set) var count = 0
    private let slotLength: Int
    private let storage: UnsafeMutableRawBufferPointer
    private var lengths: [Int]
    private var offloads: [PacketOffload]

    public convenience init(format: PacketFlowFormat) {
        self.init(capacity: format.batchSize, maximumPacketLength: format.maximumPacketLength, headroom: format.headroom)
    }

    public init(capacity: Int, maximumPacketLength: Int, headroom: Int = 0) {
        precondition(capacity > 0 && maximumPacketLength > 0 && headroom >= 0)
        self.capacity = capacity
        self.headroom = headroom
        self.maximumPacketLength = maximumPacketLength
        // Slots start 16-byte aligned so that loads in the checksum and header code stay aligned.
        slotLength = (headroom + maximumPacketLength + 15) & ~15
        storage = .allocate(byteCount: slotLength * capacity, alignment: 16)
        lengths = Array(repeating: 0, count: capacity)
        offloads = Array(repeating: .none, count: capacity)
    }

    deinit { storage.deallocate() }

    public var isEmpty: Bool { count == 0 }
    public var isFull: Bool { count == capacity }

    /// Packet `index` (without the headroom), writable in place.
    public func packet(_ index: Int) -> UnsafeMutableRawBufferPointer {
        precondition(index < count)
        return UnsafeMutableRawBufferPointer(rebasing: storage[index * slotLength + headroom..<index * slotLength + headroom + lengths[index]])
    }

    /// The headroom in front of packet `index`, for the flow's own header.
    public func headroom(_ index: Int) -> UnsafeMutableRawBufferPointer {
        precondition(index < count)
        return UnsafeMutableRawBufferPointer(rebasing: storage[index * slotLength..<index * slotLength + headroom])
    }

    /// Headroom and packet of slot `index` as one buffer: what a flow with a per-packet header
    /// reads into or writes from in one call.
    public func framed(_ index: Int) -> UnsafeMutableRawBufferPointer {
        precondition(index < count)
        return UnsafeMutableRawBufferPointer(rebasing: storage[index * slotLength..<index * slotLength + headroom + lengths[index]])
    }

    public func offload(_ index: Int) -> PacketOffload {
        precondition(index < count)
        return offloads[index]
    }

    /// The next free slot as one buffer, headroom first, or nil when the batch is full. Fill it,
    /// then `commit`.
    public var nextSlot: UnsafeMutableRawBufferPointer? {
        guard count < capacity else { return nil }
        return UnsafeMutableRawBufferPointer(rebasing: storage[count * slotLength..<count * slotLength + headroom + maximumPacketLength])
    }

    /// The packet area of the next free slot (after its headroom), or nil when the batch is full.
    public var nextPacketArea: UnsafeMutableRawBufferPointer? {
        guard let slot = nextSlot else { return nil }
        return UnsafeMutableRawBufferPointer(rebasing: slot[headroom...])
    }

    /// Makes the next slot part of the batch: a packet of `length` bytes after its headroom.
    public func commit(length: Int, offload: PacketOffload = .none) {
        precondition(count < capacity && length >= 0 && length <= maximumPacketLength)
        lengths[count] = length
        offloads[count] = offload
        count += 1
    }

    /// Copies `packet` into the next slot; false (copying nothing) when the batch is full or the
    /// packet too long.
    @discardableResult
    public func append(_ packet: UnsafeRawBufferPointer, offload: PacketOffload = .none) -> Bool {
        guard packet.count <= maximumPacketLength, let area = nextPacketArea else { return false }
        if packet.count > 0 { area.baseAddress!.copyMemory(from: packet.baseAddress!, byteCount: packet.count) }
        commit(length: packet.count, offload: offload)
        return true
    }

    /// Forgets every packet; the slots are reused.
    public func removeAll() { count = 0 }
}
