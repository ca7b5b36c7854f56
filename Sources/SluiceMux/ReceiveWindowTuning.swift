/// Receiver-side growth of one stream's window (docs/protocol.md §4.3), the way Linux autotunes a TCP
/// receive buffer: a stream starts with the window it announced (`MuxSettings.streamWindow`) and, once
/// it has shown it is bulk and drains as fast as it fills, is granted more by sending CREDIT beyond
/// what it consumed, up to `MuxSettings.maxStreamWindow`.
///
/// Why: the announced 512 KiB is about a millisecond of data at 4 Gbit/s — one turn of the receiving
/// end's loop — so a fast stream spends part of every round trip waiting for credit (a scheduler
/// trace of a one-stream download through `make bench`'s topology showed the relay asleep, waiting
/// for credit, 1.2 s of every 5). A larger window for every stream would multiply what a stalled
/// stream may buffer, so only a stream that
///   - consumed a whole window since it last grew (bulk, not request/response), and
///   - holds less than a quarter window unconsumed at that moment (its next hop keeps up: growing it
///     adds throughput, not buffered bytes)
/// grows, by doubling, and the carrier's `windowGrowthBudget` caps what all of its streams together
/// were granted beyond their first window, so one client's worst case stays near
/// streams × `streamWindow`; a `windowGrowthPool`, where one is given (the relay's), caps what all
/// carriers drawing on it were granted.
struct ReceiveWindowTuning {
    /// The window granted so far: the announced one plus every growth.
    private(set) var window: Int
    /// Bytes granted beyond the announced window (returned to the carrier's budget at close).
    private(set) var grown = 0
    private var consumedSinceGrowth = 0
    private let maximum: Int

    init(window: Int, maximum: Int) {
        self.window = window
        self.maximum = max(window, maximum)
    }

    /// `count` more bytes were consumed and `outstanding` are still held unconsumed. Returns how many
    /// bytes the window grows by now (0: not now): what `take` grants of the growth due, which it
    /// charges to the budgets it draws on; the caller grants them as extra credit.
    mutating func consumed(_ count: Int, outstanding: Int, take: (Int) -> Int) -> Int {
        guard window < maximum else { return 0 }
        consumedSinceGrowth += count
        guard consumedSinceGrowth >= window else { return 0 }
        consumedSinceGrowth = 0
        guard outstanding < window / 4 else { return 0 }
        let growth = take(min(window, maximum - window))
        guard growth > 0 else { return 0 }
        window += growth
        grown += growth
        return growth
    }
}
