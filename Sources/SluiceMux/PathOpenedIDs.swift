/// Relay: the stream ids UDP path datagrams opened whose OPEN has not come on the carrier yet
/// (docs/protocol.md §8 item 11), kept in ascending order.
///
/// Every OPEN read on the carrier forgets the ids up to its own, and a carrier's OPENs come in id
/// order, so what goes is always a prefix: a sorted array drops it in one step where a set had to
/// be filtered whole. With a new UDP socket per request the OPENs come in bursts, each record
/// carrying those of the last ~5 ms, and filtering the set once per OPEN cost the relay ~1,100
/// instructions per request (callgrind of `sluice relay` under `Benchmarks/e2e/reqcpu.py --test
/// udp-new --in-flight 1`). Ids lie within `MuxSession.pathOpenReach` past the newest OPEN, so
/// there are at most 512.
struct PathOpenedIDs {
    private var ids: [UInt32] = []

    var isEmpty: Bool { ids.isEmpty }

    func contains(_ id: UInt32) -> Bool {
        let i = firstIndex { $0 >= id }
        return i < ids.count && ids[i] == id
    }

    /// Adds `id`, which is not in yet. Path datagrams mostly arrive in id order: usually an append.
    mutating func insert(_ id: UInt32) {
        if let last = ids.last, last > id {
            ids.insert(id, at: firstIndex { $0 > id })
        } else {
            ids.append(id)
        }
    }

    /// Forgets every id up to and including `id`.
    mutating func removeThrough(_ id: UInt32) {
        let end = firstIndex { $0 > id }
        if end > 0 { ids.removeFirst(end) }
    }

    /// The index of the first id for which `isPast` holds, and for every id after it (binary search).
    private func firstIndex(where isPast: (UInt32) -> Bool) -> Int {
        var low = 0, high = ids.count
        while low < high {
            let mid = (low + high) / 2
            if isPast(ids[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
