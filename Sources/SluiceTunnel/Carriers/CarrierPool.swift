import SluiceCarrier
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSystem

/// What the pool tells the engine. Called on the loop thread.
protocol CarrierPoolDelegate: AnyObject {
    /// `carrier` came up; `upCount` carriers are up now.
    func pool(_ pool: CarrierPool, carrierUp carrier: Carrier, upCount: Int)
    /// A carrier ended; `upCount` carriers are still up.
    func pool(_ pool: CarrierPool, carrierLost label: String, end: CarrierEnd, upCount: Int)
    /// A dial failed; the slot retries after its backoff.
    func pool(_ pool: CarrierPool, dialFailed index: Int, _ failure: DialFailure)
}

/// The engine's carriers to the relay: keeps `count` of them up, reconnecting each with exponential
/// backoff (0.1 s doubling to 10 s), and picks the least-loaded one for a new stream. Handshakes run
/// one at a time so that their timestamps reach the relay in order (it rejects a timestamp not newer
/// than the last it accepted). Loop-confined.
final class CarrierPool {
    static let initialBackoffMilliseconds: UInt64 = 100
    static let maxBackoffMilliseconds: UInt64 = 10_000

    private final class Slot {
        let index: Int
        var carrier: Carrier?
        var backoff = CarrierPool.initialBackoffMilliseconds
        var waiting = false
        var dialling = false
        var upSince: Double?
        var lastHandshake: Double?
        var established = 0
        var lastError: String?
        /// The pending retry after a failed dial, if any.
        var retryTimer: LoopTimer?
        init(index: Int) { self.index = index }
    }

    private unowned let loop: EventLoop
    private let target: CarrierTarget
    private let mux: MuxSettings
    private let keepalive: KeepaliveSettings
    private var slots: [Slot]
    private var queue: [Slot] = []
    private var dialer: CarrierDialer?
    private var stopped = false
    unowned var delegate: CarrierPoolDelegate?

    init(count: Int, target: CarrierTarget, mux: MuxSettings, keepalive: KeepaliveSettings, loop: EventLoop) {
        self.target = target
        self.mux = mux
        self.keepalive = keepalive
        self.loop = loop
        slots = (0..<count).map { Slot(index: $0) }
    }

    func start() {
        for slot in slots { enqueue(slot) }
    }

    func stop() {
        stopped = true
        dialer?.cancel()
        dialer = nil
        for slot in slots {
            slot.carrier?.close(.localShutdown)
            slot.carrier = nil
        }
    }

    /// The up carrier with the fewest streams, or nil while none is up.
    func pick() -> Carrier? {
        var best: Carrier?
        for slot in slots {
            guard let c = slot.carrier, !c.isClosed, !c.session.peerGoingAway else { continue }
            if best == nil || c.session.streamCount < best!.session.streamCount { best = c }
        }
        return best
    }

    var upCount: Int { slots.reduce(0) { $0 + ($1.carrier == nil ? 0 : 1) } }

    /// The path to the relay changed (`reason` says why, such as "network changed"): closes every
    /// carrier that `survives` rejects — its streams are reset at once — and dials again now: the
    /// dial in progress (it may use the old path) starts over, and failed slots skip their backoff.
    /// Carriers `survives` accepts stay. Returns how many carriers it closed.
    @discardableResult
    func redial(reason: String, keeping survives: (Carrier) -> Bool) -> Int {
        guard !stopped else { return 0 }
        var closed = 0
        for slot in slots {
            if let carrier = slot.carrier {
                if !carrier.isClosed && survives(carrier) { continue }
                slot.carrier = nil  // first, so `lost` does not count it as an ordinary failure
                slot.upSince = nil
                slot.lastError = "reconnecting: \(reason)"
                carrier.close(.localShutdown)
                closed += 1
                Log.debug("carrier \(carrier.label) closed; reconnecting: \(reason)", "client")
            }
            slot.retryTimer?.cancel()
            slot.retryTimer = nil
            slot.backoff = Self.initialBackoffMilliseconds
        }
        if let dialer, let slot = slots.first(where: \.dialling) {
            dialer.cancel()
            self.dialer = nil
            slot.dialling = false
            queue.insert(slot, at: 0)  // still `waiting`: queued again, first
        }
        for slot in slots { enqueue(slot) }
        dialNext()
        return closed
    }

    /// Each slot as `TunnelStatistics` shows it.
    func statistics() -> [CarrierStatistics] {
        slots.map { slot in
            let c = slot.carrier
            let state: CarrierStatistics.State = c != nil ? .up : (slot.dialling ? .connecting : .waiting)
            return CarrierStatistics(
                index: slot.index + 1, state: state, upSince: slot.upSince, lastHandshake: slot.lastHandshake,
                rttMicroseconds: c?.lastRoundTripNanoseconds.map { Int($0 / 1_000) }, bytesSent: c?.bytesSent ?? 0, bytesReceived: c?.bytesReceived ?? 0,
                recordsSent: c?.recordsSent ?? 0, recordsReceived: c?.recordsReceived ?? 0,
                streams: c?.session.streamCount ?? 0, reconnects: max(0, slot.established - 1), lastError: slot.lastError)
        }
    }

    private func enqueue(_ slot: Slot) {
        guard !stopped, !slot.waiting, slot.carrier == nil else { return }
        slot.waiting = true
        queue.append(slot)
        dialNext()
    }

    private func dialNext() {
        guard !stopped, dialer == nil, !queue.isEmpty else { return }
        let slot = queue.removeFirst()
        slot.dialling = true
        let dialer = CarrierDialer(target: target, loop: loop) { [unowned self] outcome in
            self.dialer = nil
            slot.waiting = false
            slot.dialling = false
            self.dialed(slot, outcome)
            self.dialNext()
        }
        self.dialer = dialer
        dialer.start()
    }

    private func dialed(_ slot: Slot, _ outcome: CarrierDialer.Outcome) {
        guard !stopped else { return }
        switch outcome {
        case .established(let socket, let accepted):
            let label = "#\(slot.index + 1) to \(target.relay)"
            do {
                let carrier = try Carrier(socket: socket, keys: accepted.keys, role: .client, settings: mux,
                                          relayFeatures: CarrierFeatures(rawValue: accepted.relayFeatures), keepalive: keepalive,
                                          loop: loop, label: label)
                carrier.onClose = { [unowned self] carrier, end in self.lost(slot, carrier, end) }
                slot.carrier = carrier
                slot.backoff = Self.initialBackoffMilliseconds
                slot.established += 1
                let now = WallClock.seconds()
                slot.upSince = now
                slot.lastHandshake = now
                Log.info("carrier \(label) up", "client")
                delegate?.pool(self, carrierUp: carrier, upCount: upCount)
            } catch {
                socket.close()
                retry(slot, after: .connect(relay: target.relay, error))
            }
        case .failed(let failure):
            retry(slot, after: failure)
        }
    }

    private func lost(_ slot: Slot, _ carrier: Carrier, _ end: CarrierEnd) {
        guard slot.carrier === carrier else { return }
        slot.carrier = nil
        slot.upSince = nil
        slot.lastError = "\(end)"
        if stopped { return }
        Log.info("carrier \(carrier.label) down: \(end); reconnecting", "client")
        delegate?.pool(self, carrierLost: carrier.label, end: end, upCount: upCount)
        enqueue(slot)
    }

    private func retry(_ slot: Slot, after failure: DialFailure) {
        let delay = slot.backoff
        slot.backoff = min(slot.backoff * 2, Self.maxBackoffMilliseconds)
        slot.lastError = "\(failure)"
        Log.info("carrier #\(slot.index + 1) to \(target.relay) failed: \(failure); retrying in \(secondsText(delay)) s", "client")
        delegate?.pool(self, dialFailed: slot.index + 1, failure)
        // Strong capture: the pool lives as long as the engine, and `stopped` ends the retries.
        slot.retryTimer = loop.schedule(afterMilliseconds: delay) { self.enqueue(slot) }
    }
}

/// "0.1", "12.8": milliseconds as seconds with one decimal, for log lines.
private func secondsText(_ milliseconds: UInt64) -> String {
    let tenths = milliseconds / 100
    return "\(tenths / 10).\(tenths % 10)"
}
