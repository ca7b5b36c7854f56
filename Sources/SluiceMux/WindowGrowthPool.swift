import Synchronization

/// Window growth (`ReceiveWindowTuning`) that many carriers draw on together, on any thread: the bytes
/// all of their streams may be granted beyond their announced windows, as Linux's `tcp_mem` caps what
/// all TCP sockets' autotuned buffers hold. A carrier's own `MuxSettings.windowGrowthBudget` still caps
/// each carrier; this caps their sum, where the buffered bytes would share one process's memory (the
/// relay's, for its clients' uploads).
public final class WindowGrowthPool: Sendable {
    private let remaining: Atomic<Int>
    /// The pool's size.
    public let bytes: Int

    public init(bytes: Int) {
        self.bytes = bytes
        remaining = Atomic(bytes)
    }

    /// Bytes not granted now.
    public var available: Int { remaining.load(ordering: .relaxed) }

    /// Takes up to `wanted` bytes, less when fewer are left; returns what it took.
    func take(upTo wanted: Int) -> Int {
        var left = remaining.load(ordering: .relaxed)
        while true {
            let taken = min(wanted, left)
            guard taken > 0 else { return 0 }
            let (exchanged, now) = remaining.compareExchange(expected: left, desired: left - taken, ordering: .relaxed)
            if exchanged { return taken }
            left = now
        }
    }

    /// Gives back bytes `take` took.
    func giveBack(_ count: Int) {
        guard count > 0 else { return }
        remaining.add(count, ordering: .relaxed)
    }
}
