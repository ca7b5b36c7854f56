import SluiceStack

/// A fixed set of packet slots that a `PacketFlow` reads into and writes from. A slot's memory is
/// allocated when it is first filled, and again only after the engine took its packet (`take`).
///
/// Each slot holds `headroom` bytes for the flow's own header, then at most `maximumPacketLength`
/// bytes of IP packet, and the packet's `PacketOffload`. Fill a slot in place with `nextSlot` and
/// `commit(length:offload:)`, or copy a packet in with `append`. Each slot is a `PacketBuffer` of its
/// own, so that the engine can `take` a large TCP packet out of the batch and hand it to lwIP as it is;
/// the slot gets new memory when it is next filled. A flow therefore keeps no pointer into a slot
/// past the call that filled or wrote it. Loop-confined, like the engine.
public final class PacketBatch {
    public let capacity: Int
    public let headroom: Int
    public let maximumPacketLength: Int
    public private(set) var count = 0
    private let slotLength: Int
    /// Each slot's memory (`PacketBuffer.allocate`); nil once taken, until the slot is filled again.
    private var slots: [UnsafeMutableRawBufferPointer?]
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
        slotLength = headroom + maximumPacketLength
        slots = Array(repeating: nil, count: capacity)
        lengths = Array(repeating: 0, count: capacity)
        offloads = Array(repeating: .none, count: capacity)
    }

    deinit {
        for case let storage? in slots { PacketBuffer.deallocate(storage) }
    }

    /// Slot `index`'s memory to fill, made anew if it was taken. Slots start 64-byte aligned, so
    /// loads in the checksum and header code stay aligned.
    private func emptySlot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        if let storage = slots[index] { return storage }
        let storage = PacketBuffer.allocate(capacity: slotLength)
        slots[index] = storage
        return storage
    }

    /// The memory of committed packet `index`.
    private func slot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        precondition(index < count)
        guard let storage = slots[index] else { preconditionFailure("packet \(index) of the batch was taken") }
        return storage
    }

    public var isEmpty: Bool { count == 0 }
    public var isFull: Bool { count == capacity }

    /// Packet `index` (without the headroom), writable in place.
    public func packet(_ index: Int) -> UnsafeMutableRawBufferPointer {
        return UnsafeMutableRawBufferPointer(rebasing: slot(index)[headroom..<headroom + lengths[index]])
    }

    /// The headroom in front of packet `index`, for the flow's own header.
    public func headroom(_ index: Int) -> UnsafeMutableRawBufferPointer {
        return UnsafeMutableRawBufferPointer(rebasing: slot(index)[0..<headroom])
    }

    /// Headroom and packet of slot `index` as one buffer: what a flow with a per-packet header
    /// reads into or writes from in one call.
    public func framed(_ index: Int) -> UnsafeMutableRawBufferPointer {
        return UnsafeMutableRawBufferPointer(rebasing: slot(index)[0..<headroom + lengths[index]])
    }

    public func offload(_ index: Int) -> PacketOffload {
        precondition(index < count)
        return offloads[index]
    }

    /// The next free slot as one buffer, headroom first, or nil when the batch is full. Fill it,
    /// then `commit`.
    public var nextSlot: UnsafeMutableRawBufferPointer? {
        guard count < capacity else { return nil }
        return emptySlot(count)
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

    /// Takes packet `index` out of the batch with its slot's memory (headroom included, the packet
    /// after it), for a consumer that keeps the packet as it is: lwIP (`TCPStack.input`). The slot
    /// gets new memory when it is filled next; until then `index` has no packet. Memory a short packet
    /// leaves unused goes back first.
    func take(_ index: Int) -> PacketBuffer {
        var storage = slot(index)
        slots[index] = nil
        let end = headroom + lengths[index]
        if end < storage.count / 2 { storage = PacketBuffer.shrink(storage, to: end) }
        return PacketBuffer(owning: storage, packetRange: headroom..<end)
    }

    /// Forgets every packet; the slots are reused.
    public func removeAll() { count = 0 }
}
