/// Which keys were seen already, remembering at most `capacity` of them (the oldest forgotten first):
/// for a log line written once per destination, peer or client, in bounded memory however many
/// there are. Not thread-safe: confined to its owner's loop.
public struct OncePerKey<Key: Hashable> {
    public let capacity: Int
    private var seen: Set<Key> = []
    /// The remembered keys in the order they came; `next` is where the following one goes.
    private var order: [Key] = []
    private var next = 0

    public init(capacity: Int) {
        precondition(capacity > 0, "OncePerKey needs room for one key")
        self.capacity = capacity
    }

    /// True the first time `key` comes (and again once it was forgotten); false while remembered.
    public mutating func isFirst(_ key: Key) -> Bool {
        guard !seen.contains(key) else { return false }
        if order.count < capacity {
            order.append(key)
        } else {
            seen.remove(order[next])
            order[next] = key
            next = (next + 1) % capacity
        }
        seen.insert(key)
        return true
    }

    /// How many keys are remembered.
    public var count: Int { seen.count }
}
