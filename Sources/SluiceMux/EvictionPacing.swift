/// Relay side of one carrier: whether the RESET of a UDP association the relay evicts at its cap
/// must go at once, or may ride the carrier's next record (docs/protocol.md §6, item 5). Loop-confined.
///
/// At once where the client may still use the association: its datagrams on it are dropped until
/// the RESET tells it to open another. Sent at once, the RESET leaves in the turn that sends on the
/// datagram that caused the eviction, so it reaches the client before that datagram's answer: an
/// application that asks again on the evicted mapping after the answer loses nothing
/// (`Tests/E2E/test_udp.py::test_udp_mapping_cap[relay]`, the relay's cap below the client's,
/// fails when it waits). It need not where the client evicts at a cap of its own too
/// (by default both caps are 1,024): then every new socket evicts one at each end — by both ends'
/// idle order the same one — and the client's RESET for it is already on its way. A record of ours
/// per new socket then only costs the client a wake-up and a read while that socket's answer is on its way.
///
/// The relay cannot know the client's cap, so it watches what the client does with the associations
/// it evicted lately: a RESET from the client for one (sent before ours arrived) shows the client
/// evicting too, and later RESETs wait for the next record; a datagram for one shows the client
/// still using it, and RESETs go at once again — the one pending with it, too.
struct EvictionPacing {
    /// How many evicted association ids are remembered: enough for the RESETs that cross ours
    /// (one per new socket while a record is held, `MuxSettings.deferredFlushMilliseconds`), a
    /// bound on what a client can make the relay hold.
    static let remembered = 256

    /// The client was seen evicting the associations the relay evicted: RESETs may wait.
    private(set) var clientEvictsToo = false
    private var ids: Set<UInt32> = []
    /// The same ids, oldest first from `head`: the one to forget when the set is full.
    private var order: [UInt32] = []
    private var head = 0

    /// The relay evicted association `id`: whether its RESET must go at once.
    mutating func evicted(_ id: UInt32) -> Bool {
        if ids.count == Self.remembered { forgetOldest() }
        if ids.insert(id).inserted {
            if order.count - head >= 2 * Self.remembered { compact() }
            order.append(id)
        }
        return !clientEvictsToo
    }

    /// The client reset `id`, no longer live here.
    mutating func clientReset(_ id: UInt32) {
        if ids.remove(id) != nil { clientEvictsToo = true }
    }

    /// A datagram for `id`, no longer live here, came from the client: true when it was one the
    /// relay evicted, whose RESET must then go at once.
    mutating func datagramArrived(for id: UInt32) -> Bool {
        guard ids.remove(id) != nil else { return false }
        clientEvictsToo = false
        return true
    }

    private mutating func forgetOldest() {
        while head < order.count {
            let id = order[head]
            head += 1
            if ids.remove(id) != nil { return }
        }
    }

    /// Drops from `order` the ids no longer remembered (the client reset them, or sent a datagram
    /// on them): at most `remembered` stay, so `order` stays within three times that.
    private mutating func compact() {
        order = order[head...].filter { ids.contains($0) }
        head = 0
    }
}
