/// Puts IPv4 and IPv6 fragments back together into whole packets (RFC 791 §3.2, RFC 8200 §4.5).
///
/// `feed` takes raw IP packets: a packet that is not a fragment comes back `.unfragmented` (use it
/// as it is); a fragment is `.held` until the last missing piece arrives, and that call returns
/// `.reassembled` with a valid unfragmented packet: IPv4 with the first fragment's header (options
/// included), total length fixed, MF and offset cleared and a new checksum; IPv6 with the first
/// fragment's unfragmentable part, the Fragment header removed, the Next Header and payload length
/// fixed. Fragments belong together when source, destination, protocol (IPv6: the Fragment header's
/// next header) and identification agree.
///
/// This parses hostile input, so everything is bounded and every refusal is counted:
/// - a datagram larger than 65,535 bytes (IPv4 total length, IPv6 payload length) is dropped as soon
///   as one fragment says so;
/// - overlapping fragments drop the whole datagram (RFC 5722 for IPv6; the same rule for IPv4, which
///   closes the overlap tricks against IDSs and stacks); an exact duplicate is ignored;
/// - a fragment that contradicts the datagram's end (a second, different last fragment; data past the
///   end) drops the datagram;
/// - at most `maximumReassemblies` datagrams and `maximumBufferedBytes` bytes of fragment data are
///   held; a new datagram or fragment that needs room evicts the oldest datagrams first;
/// - a datagram still incomplete `timeoutMilliseconds` after its first fragment is dropped by
///   `expire(now:)` (which `feed` also runs).
///
/// Memory: each datagram in progress uses a slot of about 66 KiB (room for the largest datagram)
/// plus 3 KiB of bitmaps; slots are allocated the first time they are needed and kept for reuse, so
/// at most `maximumReassemblies` of them exist and the packet path allocates nothing once they do.
///
/// Not done: the IPv6 first fragment is not required to hold the whole header chain (RFC 7112; a
/// chain cut inside an extension header is refused as malformed all the same), ECN codepoints are not
/// merged (RFC 3168 §5.3), an unfragmentable part longer than 1,024 bytes is refused.
///
/// Loop-confined: one instance belongs to one packet thread.
public final class FragmentReassembler {
    /// Bounds on what is held.
    public struct Limits: Hashable, Sendable {
        /// Datagrams being reassembled at once.
        public var maximumReassemblies: Int
        /// Fragment data held across all of them.
        public var maximumBufferedBytes: Int
        /// How long a datagram may take to complete, from its first fragment.
        public var timeoutMilliseconds: UInt64
        /// Whether an IPv4 fragment's header checksum is checked.
        public var verifyIPv4Checksum: Bool

        public init(
            maximumReassemblies: Int = 64, maximumBufferedBytes: Int = 4 << 20, timeoutMilliseconds: UInt64 = 30_000,
            verifyIPv4Checksum: Bool = true
        ) {
            self.maximumReassemblies = max(1, maximumReassemblies)
            self.maximumBufferedBytes = max(0, maximumBufferedBytes)
            self.timeoutMilliseconds = timeoutMilliseconds
            self.verifyIPv4Checksum = verifyIPv4Checksum
        }
    }

    /// What happened, counted: fragments for the per-fragment reasons, datagrams for the others.
    public struct Counters: Hashable, Sendable {
        /// Fragments taken in (duplicates not included).
        public var fragments = 0
        /// Datagrams completed.
        public var reassembled = 0
        /// Fragments ignored as exact duplicates of one already held.
        public var duplicates = 0
        /// Fragments that did not parse, failed the IPv4 header checksum, were empty, or (with more
        /// to follow) were not a multiple of 8 bytes long.
        public var malformed = 0
        /// Fragments dropped because their datagram would exceed 65,535 bytes (or its unfragmentable
        /// part 1,024); a datagram found too big on completion counts here too.
        public var tooBig = 0
        /// Datagrams dropped because two fragments overlapped.
        public var overlapping = 0
        /// Datagrams dropped because a fragment contradicted where the datagram ends.
        public var inconsistent = 0
        /// Datagrams dropped because one fragment alone did not fit `maximumBufferedBytes`.
        public var overBudget = 0
        /// Datagrams dropped incomplete after the timeout.
        public var timedOut = 0
        /// Datagrams dropped, oldest first, to make room for newer ones.
        public var evicted = 0

        public init() {}
    }

    /// Why `feed` refused a fragment.
    public enum Drop: Hashable, Sendable {
        /// The packet did not parse, or the IPv4 header checksum failed.
        case malformed(WireError)
        /// An empty fragment, or one with more to follow whose length is not a multiple of 8.
        case badLength
        /// The datagram would exceed 65,535 bytes (or the unfragmentable part 1,024).
        case tooBig
        /// It overlaps a fragment already held: the whole datagram is dropped.
        case overlap
        /// It contradicts the datagram's end: the whole datagram is dropped.
        case inconsistent
        /// It alone does not fit `maximumBufferedBytes`: the whole datagram is dropped.
        case overBudget
    }

    /// What `feed` did with a packet.
    public enum Outcome {
        /// Not a fragment (an IPv6 atomic fragment included): use the packet as it is.
        case unfragmented
        /// Held (or ignored as a duplicate); the datagram is not complete yet.
        case held
        /// The datagram is complete. The bytes are the reassembler's and stay valid only until the
        /// next call into it.
        case reassembled(UnsafeRawBufferPointer)
        /// Refused and counted.
        case dropped(Drop)
    }

    public let limits: Limits
    public private(set) var counters = Counters()
    /// Fragment data held now.
    public private(set) var bufferedBytes = 0
    /// Slots, created on first need, never more than `limits.maximumReassemblies`.
    var slots: [Slot] = []
    private var nextOrder: UInt64 = 0

    public init(limits: Limits = Limits()) {
        self.limits = limits
        slots.reserveCapacity(limits.maximumReassemblies)
    }

    /// Datagrams in progress.
    public var reassemblyCount: Int { slots.reduce(0) { $0 + ($1.inUse ? 1 : 0) } }

    /// Takes one raw IP packet; `now` is a monotonic clock in milliseconds.
    public func feed(_ packet: UnsafeRawBufferPointer, now: UInt64) -> Outcome {
        expire(now: now)
        let piece: Piece
        switch Piece.parse(packet, verifyIPv4Checksum: limits.verifyIPv4Checksum) {
        case .unfragmented: return .unfragmented
        case .drop(let drop):
            switch drop {
            case .tooBig: counters.tooBig += 1
            default: counters.malformed += 1
            }
            return .dropped(drop)
        case .piece(let p): piece = p
        }
        let slot = find(piece.key) ?? start(piece.key, now: now)
        return add(piece, to: slot)
    }

    /// Drops every datagram whose first fragment arrived `timeoutMilliseconds` or more before `now`.
    public func expire(now: UInt64) {
        for slot in slots where slot.inUse && now >= slot.started && now - slot.started >= limits.timeoutMilliseconds {
            release(slot)
            counters.timedOut += 1
        }
    }

    /// Forgets every datagram in progress (counted nowhere); the slots stay allocated.
    public func removeAll() {
        for slot in slots where slot.inUse { release(slot) }
    }

    // MARK: slots

    private func find(_ key: Key) -> Slot? {
        for slot in slots where slot.inUse && slot.key == key { return slot }
        return nil
    }

    /// A free slot for a new datagram, evicting the oldest if all are in use.
    private func start(_ key: Key, now: UInt64) -> Slot {
        var free: Slot? = nil
        for slot in slots where !slot.inUse {
            free = slot
            break
        }
        if free == nil {
            if slots.count < limits.maximumReassemblies {
                free = Slot()
                slots.append(free!)
            } else {
                let oldest = self.oldest(except: nil)!  // all in use, and there is at least one
                release(oldest)
                counters.evicted += 1
                free = oldest
            }
        }
        let slot = free!
        slot.reset(key: key, started: now, order: nextOrder)
        nextOrder &+= 1
        return slot
    }

    private func oldest(except excluded: Slot?) -> Slot? {
        var oldest: Slot? = nil
        for slot in slots where slot.inUse && slot !== excluded {
            if oldest == nil || slot.order < oldest!.order { oldest = slot }
        }
        return oldest
    }

    private func release(_ slot: Slot) {
        bufferedBytes -= slot.received
        slot.inUse = false
    }

    // MARK: adding a fragment

    private func add(_ piece: Piece, to slot: Slot) -> Outcome {
        let start = piece.offset, end = piece.offset + piece.data.count
        let firstUnit = start / 8, endUnit = (end + 7) / 8
        if slot.anyCovered(firstUnit..<endUnit) {
            if slot.isDuplicate(firstUnit..<endUnit), piece.more == (slot.lastStart != start), piece.more || slot.dataLength == end {
                counters.duplicates += 1
                return .held
            }
            release(slot)
            counters.overlapping += 1
            return .dropped(.overlap)
        }
        if piece.more {
            if let total = slot.dataLength, end >= total { return inconsistent(slot) }
        } else {
            if slot.dataLength != nil || slot.maximumEnd > end { return inconsistent(slot) }
        }
        if piece.data.count > limits.maximumBufferedBytes {
            release(slot)
            counters.overBudget += 1
            return .dropped(.overBudget)
        }
        while bufferedBytes + piece.data.count > limits.maximumBufferedBytes, let victim = oldest(except: slot) {
            release(victim)
            counters.evicted += 1
        }
        if bufferedBytes + piece.data.count > limits.maximumBufferedBytes {  // only this datagram left
            release(slot)
            counters.overBudget += 1
            return .dropped(.overBudget)
        }
        slot.store(piece, firstUnit..<endUnit)
        if !piece.more {
            slot.dataLength = end
            slot.lastStart = start
        }
        bufferedBytes += piece.data.count
        counters.fragments += 1
        guard let total = slot.dataLength, slot.received == total else { return .held }
        return complete(slot, dataLength: total)
    }

    private func inconsistent(_ slot: Slot) -> Outcome {
        release(slot)
        counters.inconsistent += 1
        return .dropped(.inconsistent)
    }

    /// Fixes the first fragment's header in front of the data and hands the packet over.
    private func complete(_ slot: Slot, dataLength: Int) -> Outcome {
        release(slot)
        guard let packet = slot.finish(dataLength: dataLength) else {
            counters.tooBig += 1
            return .dropped(.tooBig)
        }
        counters.reassembled += 1
        return .reassembled(packet)
    }
}
