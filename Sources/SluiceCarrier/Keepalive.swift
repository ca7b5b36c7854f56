/// When a carrier sends PING, how it measures the round trip, and when it gives up on its peer
/// (docs/protocol.md §5).
public struct KeepaliveSettings: Sendable, Equatable {
    /// How the carrier pings.
    public enum Mode: Sendable, Equatable {
        /// The client: a PING every `interval`, busy or not. The carrier is dead when, with a PING
        /// unanswered, nothing at all has arrived for `interval × misses`: the PONGs that should have
        /// come did not. Counting from the last byte rather than from the PING makes a stall found
        /// `interval × misses` after it, not an interval later; and a carrier busy receiving is alive
        /// even while its PONG waits behind the data.
        case probe(misses: Int)
        /// The relay: a PING after `interval` without receiving anything, then every `interval` while
        /// that lasts; the carrier is dead after `deadAfterMilliseconds` without receiving anything.
        /// A client pings every few seconds, so the rule is only ever met by a carrier that is gone.
        case whenIdle(deadAfterMilliseconds: UInt64)
    }

    public var intervalMilliseconds: UInt64
    public var mode: Mode

    public init(intervalMilliseconds: UInt64, mode: Mode) {
        precondition(intervalMilliseconds > 0, "a keepalive interval of 0")
        self.intervalMilliseconds = intervalMilliseconds
        self.mode = mode
    }

    /// The client's default: a PING every 5 s, dead after 3 unanswered (15 s) — TCP's own
    /// retransmission timeout would take minutes to notice a path that stopped passing bytes.
    public static let client = KeepaliveSettings(intervalMilliseconds: 5_000, mode: .probe(misses: 3))

    /// The relay's rule: a PING after 10 s of silence (so a client that pings only when idle, as the
    /// first clients did, always hears something within its own 30 s), closed after 30 s of silence.
    public static let relay = KeepaliveSettings(intervalMilliseconds: 10_000, mode: .whenIdle(deadAfterMilliseconds: 30_000))

    /// How long the peer may stay silent before the carrier is declared dead.
    public var deadAfterMilliseconds: UInt64 {
        switch mode {
        case .probe(let misses): return intervalMilliseconds * UInt64(misses)
        case .whenIdle(let dead): return dead
        }
    }
}

/// The keepalive of one carrier, without I/O: the carrier tells it what arrived and asks it, when its
/// timer fires, whether to ping or give up. Times are nanoseconds of the monotonic clock; a PING's
/// opaque value is the time it was sent, so its PONG gives the round trip. Loop-confined like its
/// carrier.
struct Keepalive {
    /// What the carrier does after `tick`.
    enum Decision: Equatable {
        /// Close the carrier.
        case dead
        /// Send PING with this opaque value if set, and call `tick` again at `nextTick`.
        case carryOn(ping: UInt64?, nextTick: UInt64)
    }

    /// PINGs remembered at most while unanswered (their send times); more are sent but not matched.
    static let outstandingLimit = 64

    let settings: KeepaliveSettings
    private let interval: UInt64
    private let deadAfter: UInt64
    private(set) var lastReceive: UInt64
    private var lastPing: UInt64?
    /// Send times of PINGs not answered yet, oldest first.
    private var outstanding: [UInt64] = []
    /// The round trip of the newest answered PING.
    private(set) var lastRoundTrip: UInt64?
    /// When the newest PONG arrived.
    private(set) var lastPong: UInt64?

    init(settings: KeepaliveSettings, now: UInt64) {
        self.settings = settings
        interval = settings.intervalMilliseconds * 1_000_000
        deadAfter = settings.deadAfterMilliseconds * 1_000_000
        lastReceive = now
    }

    /// Bytes arrived from the peer.
    mutating func received(now: UInt64) { lastReceive = now }

    /// A PONG arrived. PONGs come back in order, so every PING sent up to `opaque` is answered; a
    /// value that matches no PING of ours is ignored.
    mutating func pong(_ opaque: UInt64, now: UInt64) {
        guard let index = outstanding.firstIndex(of: opaque) else { return }
        outstanding.removeFirst(index + 1)
        lastRoundTrip = now >= opaque ? now - opaque : 0
        lastPong = now
    }

    /// Whether to ping or give up now, and when to ask again.
    mutating func tick(now: UInt64) -> Decision {
        if isDead(now: now) { return .dead }
        var ping: UInt64?
        if now >= nextPing {
            ping = now
            lastPing = now
            if outstanding.count < Self.outstandingLimit { outstanding.append(now) }
        }
        return .carryOn(ping: ping, nextTick: min(nextPing, deadline))
    }

    private func isDead(now: UInt64) -> Bool { now >= deadline }

    /// The earliest time the carrier can be dead, given what is known now.
    private var deadline: UInt64 {
        switch settings.mode {
        case .probe:
            // Silence that long while a PING waits for its answer.
            return outstanding.isEmpty ? .max : lastReceive &+ deadAfter
        case .whenIdle:
            return lastReceive &+ deadAfter
        }
    }

    /// When the next PING is due.
    private var nextPing: UInt64 {
        switch settings.mode {
        case .probe:
            return lastPing.map { $0 &+ interval } ?? 0
        case .whenIdle:
            return max(lastReceive, lastPing ?? 0) &+ interval
        }
    }
}
