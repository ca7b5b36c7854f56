/// A token bucket: `rate` tokens a second, at most `burst` saved up. Taking may run it into debt;
/// `wait(now:)` says how long until the debt is paid. Times are milliseconds of the loop's clock.
/// The relay keeps one per client for the streams it opens (`--max-stream-rate`). A value type,
/// confined to its owner's loop.
struct TokenBucket: Sendable {
    let rate: Double
    let burst: Double
    private(set) var tokens: Double
    private var last: UInt64

    init(rate: Int, now: UInt64) {
        precondition(rate > 0, "a token bucket without a rate")
        self.rate = Double(rate)
        burst = Double(rate)
        tokens = burst
        last = now
    }

    private mutating func refill(_ now: UInt64) {
        guard now > last else { return }
        tokens = min(burst, tokens + Double(now - last) * rate / 1000)
        last = now
    }

    /// Takes one token, into debt if need be.
    mutating func take(now: UInt64) {
        refill(now)
        tokens -= 1
    }

    /// Milliseconds until the bucket is out of debt (0 when it is not in debt).
    mutating func wait(now: UInt64) -> UInt64 {
        refill(now)
        guard tokens < 0 else { return 0 }
        return UInt64((-tokens * 1000 / rate).rounded(.up))
    }
}
