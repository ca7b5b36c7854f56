/// When a client's UDP path is usable, and when to probe it (docs/protocol.md §8), without I/O: the
/// path tells it what it sent and what came back, and asks it on a timer whether to send a PROBE.
/// Times are milliseconds of the loop's monotonic clock. Loop-confined like its path.
///
/// ```
///            answer                      a probe unanswered for answerTimeout
/// validating ───────▶ up ───────────────────────────────────────────────▶ down
///     ▲   │ no answer for answerTimeout                                     │
///     │   └─────────────────────────────────────────────────────────────▶ down
///     └──────────── backoff elapsed (1 s doubling to 8 s) and UDP flows on the carrier ┘
/// ```
///
/// While validating or down, datagrams go on the carrier. While up, a probe goes out when the path
/// carried datagrams and nothing came back for `silenceProbe`, at least every `busyProbe` while it
/// carries datagrams (a reply proves both directions, a datagram from the relay only one), and
/// after `keepalive` without sending while the carrier has UDP associations (a NAT keepalive). An
/// unanswered probe is sent again every `probeInterval`.
struct UDPPathMonitor {
    struct Timing: Equatable {
        var probeInterval: UInt64 = 500
        var answerTimeout: UInt64 = 2_000
        var silenceProbe: UInt64 = 1_000
        var busyProbe: UInt64 = 5_000
        var keepalive: UInt64 = 15_000
        var initialBackoff: UInt64 = 1_000
        var maxBackoff: UInt64 = 8_000
        /// How often `tick` runs when nothing is due sooner.
        var idleTick: UInt64 = 250
    }

    enum State: String, Equatable {
        case validating, up, down
    }

    /// A change worth a log line and a counter.
    enum Change: Equatable {
        /// The first probe of a validation was answered: the path is up.
        case validated(roundTrip: UInt64)
        /// The path went down: it never answered (`wasUp` false) or stopped answering.
        case lost(wasUp: Bool, why: String)
    }

    /// What the path does after `tick`.
    struct Decision: Equatable {
        var probe = false
        var change: Change?
        var nextTick: UInt64
    }

    let timing: Timing
    private(set) var state = State.validating
    private(set) var backoff: UInt64
    private var retryAt: UInt64 = 0
    /// When the oldest unanswered probe went out.
    private var unansweredSince: UInt64?
    private var lastProbe: UInt64?
    private var lastSent: UInt64
    private var lastReceived: UInt64
    private var lastAnswered: UInt64
    /// Datagrams went on the path since the last answered probe.
    private var carriedSinceAnswer = false
    private(set) var lastRoundTrip: UInt64?

    init(now: UInt64, timing: Timing = Timing()) {
        self.timing = timing
        backoff = timing.initialBackoff
        lastSent = now
        lastReceived = now
        lastAnswered = now
    }

    /// A datagram went on the path.
    mutating func sentDatagram(now: UInt64) {
        lastSent = now
        carriedSinceAnswer = true
    }

    /// A packet from the relay authenticated.
    mutating func received(now: UInt64) { lastReceived = now }

    /// A PROBE_REPLY to the probe sent at `sentAt` arrived; a late one to an older probe counts too.
    mutating func answered(sentAt: UInt64, now: UInt64) -> Change? {
        lastReceived = now
        guard state != .down else { return nil }  // a late answer; the next validation decides
        unansweredSince = nil
        lastAnswered = now
        carriedSinceAnswer = false
        lastRoundTrip = now >= sentAt ? now - sentAt : 0
        guard state == .validating else { return nil }
        state = .up
        backoff = timing.initialBackoff
        return .validated(roundTrip: lastRoundTrip ?? 0)
    }

    /// The socket reported the path broken (ICMP unreachable, a send error): down at once.
    mutating func failed(now: UInt64, why: String) -> Change? {
        guard state != .down else { return nil }
        return goDown(now: now, why: why)
    }

    /// Whether to probe now, whether the state changed, and when to ask again. `active`: the carrier
    /// has UDP associations, so the path is worth keeping alive and retrying.
    mutating func tick(now: UInt64, active: Bool) -> Decision {
        var decision = Decision(nextTick: now + timing.idleTick)
        switch state {
        case .validating, .up:
            if let since = unansweredSince {
                if now >= since + timing.answerTimeout {
                    let why = state == .validating ? "no answer to probes for \(seconds(timing.answerTimeout)) s"
                        : "the path stopped answering probes for \(seconds(timing.answerTimeout)) s"
                    decision.change = goDown(now: now, why: why)
                    decision.nextTick = min(decision.nextTick, retryAt)
                    return decision
                }
                decision.probe = now >= (lastProbe ?? 0) + timing.probeInterval
            } else if state == .validating {
                decision.probe = true
            } else if carriedSinceAnswer && (now >= lastReceived + timing.silenceProbe || now >= lastAnswered + timing.busyProbe) {
                decision.probe = true
            } else if active && now >= lastSent + timing.keepalive {
                decision.probe = true
            }
        case .down:
            if now >= retryAt && active {
                state = .validating
                unansweredSince = nil
                decision.probe = true
            }
        }
        if decision.probe { probed(now: now) }
        return decision
    }

    private mutating func probed(now: UInt64) {
        if unansweredSince == nil { unansweredSince = now }
        lastProbe = now
        lastSent = now
    }

    private mutating func goDown(now: UInt64, why: String) -> Change {
        let wasUp = state == .up
        state = .down
        unansweredSince = nil
        carriedSinceAnswer = false
        retryAt = now + backoff
        backoff = min(backoff * 2, timing.maxBackoff)
        return .lost(wasUp: wasUp, why: why)
    }

    /// "2", "0.5": milliseconds as seconds, for the reasons.
    private func seconds(_ milliseconds: UInt64) -> String {
        milliseconds % 1000 == 0 ? "\(milliseconds / 1000)" : "\(Double(milliseconds) / 1000)"
    }
}
