/// The decisions of a client with several relays, without I/O: which relays are healthy, how many
/// carriers each should have, and which relay a new flow goes to. `RelayUpstream` feeds it what its
/// carrier pools report and makes the pools match its `plan`. Relays are indices into the
/// configured list, in its order.
///
/// Health comes from the carriers' own signals. A relay is **down** when a carrier to it went
/// silent (PINGs unanswered for `--ping-interval` × `--ping-misses`: a stopped process, a dead path)
/// or when a dial to it failed (connect, handshake) while none of its carriers was up; it is **up**
/// again as soon as a carrier to it completes a handshake. A carrier that merely closed (the relay
/// restarted, a connection was reset) changes nothing by itself: its redial, at once, decides.
///
/// With one relay nothing changes from a plain carrier pool: it always wants every carrier, and
/// silence on one carrier closes only that carrier (a relay behind a balancer may be several).
struct RelayChoice {
    typealias Health = TunnelStatistics.Relay.Health

    /// What a relay's carrier pool should do now.
    struct Plan: Equatable {
        /// Carrier slots to keep dialled; carriers beyond them take no new flows and close once idle.
        var carriers: Int
        /// Close the carriers it has (their flows are reset): the relay is down and others can
        /// take the flows.
        var closeCarriers: Bool
    }

    /// A relay's carriers as the choice of a new flow's relay sees them.
    struct Load: Equatable {
        /// Carriers up and taking new flows.
        var carriers: Int
        /// Streams open on them.
        var streams: Int
    }

    let policy: RelayPolicy
    /// Carriers per relay in use (`--carriers`).
    let carriers: Int
    private(set) var health: [Health]

    init(relays: Int, policy: RelayPolicy, carriers: Int) {
        precondition(relays > 0 && carriers > 0)
        self.policy = policy
        self.carriers = carriers
        health = Array(repeating: .unknown, count: relays)
    }

    /// The relay failover sends carriers to: the first not down; nil while all are.
    var active: Int? { health.firstIndex { $0 != .down } }

    /// What each relay's pool should do now. A relay that is down keeps one slot dialling (with its
    /// backoff) as a probe, so that it is noticed when it is back — in failover only when it comes
    /// before the relay in use, since only then would its return change anything.
    var plan: [Plan] {
        guard health.count > 1 else { return [Plan(carriers: carriers, closeCarriers: false)] }
        let active = self.active
        return health.indices.map { i in
            if health[i] == .down {
                let probe = policy == .spread || active == nil || i < active!
                return Plan(carriers: probe ? 1 : 0, closeCarriers: true)
            }
            let used = policy == .spread || i == active
            return Plan(carriers: used ? carriers : 0, closeCarriers: false)
        }
    }

    /// A carrier to `relay` completed its handshake. Returns whether the relay's health changed.
    mutating func carrierUp(_ relay: Int) -> Bool {
        set(relay, .up)
    }

    /// A carrier to `relay` ended; `silent` when its PINGs went unanswered. Returns whether the
    /// relay went down.
    mutating func carrierLost(_ relay: Int, silent: Bool) -> Bool {
        silent && set(relay, .down)
    }

    /// A dial to `relay` failed while `upCarriers` of its carriers were up. Returns whether the relay
    /// went down.
    mutating func dialFailed(_ relay: Int, upCarriers: Int) -> Bool {
        upCarriers == 0 && set(relay, .down)
    }

    /// The relay a new flow goes to, given each relay's `loads`; nil when none has a carrier up.
    /// Failover: the first healthy relay with a carrier up, in list order. Spread: the one with the
    /// fewest streams per carrier (list order breaks ties).
    func relay(forNewFlowWith loads: [Load]) -> Int? {
        precondition(loads.count == health.count)
        var best: Int?
        for (i, load) in loads.enumerated() where load.carriers > 0 && (health[i] != .down || health.count == 1) {
            if policy == .failover { return i }
            guard let b = best else {
                best = i
                continue
            }
            // streams / carriers < best's, without division
            if load.streams * loads[b].carriers < loads[b].streams * load.carriers { best = i }
        }
        return best
    }

    private mutating func set(_ relay: Int, _ new: Health) -> Bool {
        guard health[relay] != new else { return false }
        health[relay] = new
        return true
    }
}
