/// `--busy-poll`, for `up` and `relay`: how long an event loop polls after traffic before it sleeps
/// (`EventLoop.busyPollNanoseconds`, which says what it buys and what it costs).
public enum BusyPoll {
    /// Microseconds; 0 is off, the default.
    public static let range = 0...10_000
}
