/// At most one log line per key in each interval, with a count of the lines it held back: for lines a
/// peer can cause at will (a client's refused streams, thousands a second if it likes), which must
/// not fill the disk or take the loop's time. Not thread-safe: confined to its owner's loop.
public struct RateLimitedLog<Key: Hashable> {
    public let intervalMilliseconds: UInt64
    private var last: [Key: (at: UInt64, heldBack: Int)] = [:]

    public init(intervalMilliseconds: UInt64 = 10_000) {
        self.intervalMilliseconds = intervalMilliseconds
    }

    /// Whether to write a line for `key` now; if so, how many were held back since its last one.
    public mutating func admit(_ key: Key, now: UInt64) -> Int? {
        if let entry = last[key], now &- entry.at < intervalMilliseconds {
            last[key] = (entry.at, entry.heldBack + 1)
            return nil
        }
        let heldBack = last[key]?.heldBack ?? 0
        if last.count >= 4096 { last.removeAll() }  // keys are clients; a bound all the same
        last[key] = (now, 0)
        return heldBack
    }

    /// " (12 more like it in the last 10 s)", or "" when none was held back.
    public func suffix(_ heldBack: Int) -> String {
        heldBack == 0 ? "" : " (\(heldBack) more like it held back since the last line)"
    }
}
