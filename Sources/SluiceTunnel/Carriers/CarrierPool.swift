import SluiceCarrier
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSystem

/// What the pool tells its owner. Called on the loop thread.
protocol CarrierPoolDelegate: AnyObject {
    /// `carrier` came up, the pool's `index`th (from 1); `upCount` carriers are up now.
    func pool(_ pool: CarrierPool, carrierUp carrier: Carrier, index: Int, upCount: Int)
    /// A carrier ended; `upCount` carriers are still up.
    func pool(_ pool: CarrierPool, carrierLost label: String, index: Int, end: CarrierEnd, upCount: Int)
    /// A dial failed; the slot retries after its backoff.
    func pool(_ pool: CarrierPool, dialFailed index: Int, _ failure: DialFailure)
}

/// The carriers to one relay: keeps `carriers` of them up (`setCarriers`), reconnecting each with
/// exponential backoff (0.1 s doubling to 10 s), and picks the least-loaded one for a new stream.
/// Handshakes run one at a time so that their timestamps reach the relay in order (it rejects a
/// timestamp not newer than the last it accepted). Loop-confined.
///
/// Lowering the count retires the slots past it: they stop dialling, and their carriers take no new
/// streams and close once their last stream ended (checked once a second), so the flows on them run
/// to their end. `closeCarriers` closes every carrier at once instead (their streams are reset).
final class CarrierPool {
    static let initialBackoffMilliseconds: UInt64 = 100
    static let maxBackoffMilliseconds: UInt64 = 10_000
    /// How often carriers of retired slots are checked for their last stream.
    static let drainCheckMilliseconds: UInt64 = 1_000

    private final class Slot {
        let index: Int
        var carrier: Carrier?
        var backoff = CarrierPool.initialBackoffMilliseconds
        var waiting = false
        var dialling = false
        /// Past the wanted count: no dialling, its carrier (if any) drains.
        var retired = true
        var upSince: Double?
        var lastHandshake: Double?
        var established = 0
        var lastError: String?
        /// The pending retry after a failed dial, if any.
        var retryTimer: LoopTimer?
        init(index: Int) { self.index = index }
    }

    private unowned let loop: EventLoop
    let target: CarrierTarget
    private let mux: MuxSettings
    private let keepalive: KeepaliveSettings
    private var slots: [Slot] = []
    private var queue: [Slot] = []
    private var dialer: CarrierDialer?
    private var drainTimer: LoopTimer?
    private var stopped = false
    unowned var delegate: CarrierPoolDelegate?

    init(target: CarrierTarget, mux: MuxSettings, keepalive: KeepaliveSettings, loop: EventLoop) {
        self.target = target
        self.mux = mux
        self.keepalive = keepalive
        self.loop = loop
    }

    /// Keeps `count` carriers up from now on: slots up to it dial (at once, backoff reset, if they
    /// were retired), slots past it retire.
    func setCarriers(_ count: Int) {
        guard !stopped else { return }
        while slots.count < count { slots.append(Slot(index: slots.count)) }
        for slot in slots where slot.retired != (slot.index >= count) {
            slot.retired = slot.index >= count
            if slot.retired {
                retire(slot)
            } else {
                slot.backoff = Self.initialBackoffMilliseconds
                enqueue(slot)
            }
        }
        closeDrained()
    }

    func stop() {
        stopped = true
        dialer?.cancel()
        dialer = nil
        drainTimer?.cancel()
        for slot in slots {
            slot.retryTimer?.cancel()
            slot.carrier?.close(.localShutdown)
            slot.carrier = nil
        }
    }

    /// The carrier taking new streams with the fewest streams, or nil while none is up.
    func pick() -> Carrier? {
        var best: Carrier?
        for slot in slots where !slot.retired {
            guard let c = slot.carrier, !c.isClosed, !c.session.peerGoingAway else { continue }
            if best == nil || c.session.streamCount < best!.session.streamCount { best = c }
        }
        return best
    }

    /// Carriers up, retired ones included.
    var upCount: Int { slots.reduce(0) { $0 + ($1.carrier == nil ? 0 : 1) } }

    /// Carriers that take new streams, and the streams on them (`RelayChoice.Load`).
    var load: (carriers: Int, streams: Int) {
        var carriers = 0, streams = 0
        for slot in slots where !slot.retired {
            guard let c = slot.carrier else { continue }
            carriers += 1
            streams += c.session.streamCount
        }
        return (carriers, streams)
    }

    /// Closes every carrier now (their streams are reset); slots in use dial again, as after a
    /// loss. `reason` becomes their last error. Returns how many it closed.
    @discardableResult
    func closeCarriers(reason: String) -> Int {
        var closed = 0
        for slot in slots {
            guard let carrier = slot.carrier else { continue }
            close(carrier, of: slot, reason: reason)
            closed += 1
            enqueue(slot)
        }
        return closed
    }

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
                close(carrier, of: slot, reason: "reconnecting: \(reason)")
                closed += 1
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

    /// Each slot in use, and each retired one still holding a carrier, as `TunnelStatistics` shows it.
    func statistics() -> [CarrierStatistics] {
        slots.filter { !$0.retired || $0.carrier != nil }.map { slot in
            let c = slot.carrier
            let state: CarrierStatistics.State = c != nil ? (slot.retired ? .draining : .up) : (slot.dialling ? .connecting : .waiting)
            return CarrierStatistics(
                index: slot.index + 1, relay: "\(target.relay)", state: state, upSince: slot.upSince, lastHandshake: slot.lastHandshake,
                rttMicroseconds: c?.lastRoundTripNanoseconds.map { Int($0 / 1_000) }, bytesSent: c?.bytesSent ?? 0, bytesReceived: c?.bytesReceived ?? 0,
                recordsSent: c?.recordsSent ?? 0, recordsReceived: c?.recordsReceived ?? 0,
                streams: c?.session.streamCount ?? 0, reconnects: max(0, slot.established - 1), lastError: slot.lastError)
        }
    }

    /// Closes `carrier` without reporting it as lost: `slot` lets go of it first.
    private func close(_ carrier: Carrier, of slot: Slot, reason: String) {
        slot.carrier = nil
        slot.upSince = nil
        slot.lastError = reason
        carrier.close(.localShutdown)
        Log.debug("carrier \(carrier.label) closed: \(reason)", "client")
    }

    private func retire(_ slot: Slot) {
        slot.retryTimer?.cancel()
        slot.retryTimer = nil
        if slot.dialling {
            dialer?.cancel()
            dialer = nil
            slot.dialling = false
        }
        slot.waiting = false
        queue.removeAll { $0 === slot }
        dialNext()
    }

    /// Closes carriers of retired slots that carry no stream; checks again later while some do.
    private func closeDrained() {
        var draining = false
        for slot in slots where slot.retired {
            guard let carrier = slot.carrier else { continue }
            if carrier.session.streamCount == 0 {
                close(carrier, of: slot, reason: "no longer needed")
            } else {
                draining = true
            }
        }
        guard draining, drainTimer?.isPending != true else { return }
        // Strong capture: the pool lives as long as the engine, and stop() cancels it.
        drainTimer = loop.schedule(afterMilliseconds: Self.drainCheckMilliseconds) { self.closeDrained() }
    }

    private func enqueue(_ slot: Slot) {
        guard !stopped, !slot.retired, !slot.waiting, slot.carrier == nil else { return }
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
                delegate?.pool(self, carrierUp: carrier, index: slot.index + 1, upCount: upCount)
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
        Log.info("carrier \(carrier.label) down: \(end)" + (slot.retired ? "" : "; reconnecting"), "client")
        delegate?.pool(self, carrierLost: carrier.label, index: slot.index + 1, end: end, upCount: upCount)
        enqueue(slot)
    }

    private func retry(_ slot: Slot, after failure: DialFailure) {
        let delay = slot.backoff
        slot.backoff = min(slot.backoff * 2, Self.maxBackoffMilliseconds)
        slot.lastError = "\(failure)"
        // Before the delegate, which may retire the slot and so cancel this retry.
        // Strong capture: the pool lives as long as the engine, and `stopped` ends the retries.
        slot.retryTimer = loop.schedule(afterMilliseconds: delay) { self.enqueue(slot) }
        delegate?.pool(self, dialFailed: slot.index + 1, failure)
        Log.info("carrier #\(slot.index + 1) to \(target.relay) failed: \(failure)" + (slot.retired ? "" : "; retrying in \(secondsText(delay)) s"), "client")
    }
}

/// "0.1", "12.8": milliseconds as seconds with one decimal, for log lines.
private func secondsText(_ milliseconds: UInt64) -> String {
    let tenths = milliseconds / 100
    return "\(tenths / 10).\(tenths % 10)"
}
