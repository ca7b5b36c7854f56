import SluiceCarrier
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceMux

/// The client's carriers to the relay: keeps `settings.carriers` of them up, reconnecting each with
/// exponential backoff (0.1 s doubling to 10 s), and picks the least-loaded one for a new stream.
/// Handshakes run one at a time so that their timestamps reach the relay in order (it rejects a
/// timestamp not newer than the last it accepted). Loop-confined.
final class CarrierPool {
    static let initialBackoffMilliseconds: UInt64 = 100
    static let maxBackoffMilliseconds: UInt64 = 10_000

    private final class Slot {
        let index: Int
        var carrier: Carrier?
        var backoff = CarrierPool.initialBackoffMilliseconds
        var waiting = false
        init(index: Int) { self.index = index }
    }

    private unowned let loop: EventLoop
    private let settings: ClientSettings
    private var slots: [Slot]
    private var queue: [Slot] = []
    private var dialer: CarrierDialer?
    private var stopped = false
    private var connectedOnce = false

    init(settings: ClientSettings, loop: EventLoop) {
        self.settings = settings
        self.loop = loop
        slots = (0..<settings.carriers).map { Slot(index: $0) }
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

    var upCount: Int { slots.filter { $0.carrier != nil }.count }

    private func enqueue(_ slot: Slot) {
        guard !stopped, !slot.waiting else { return }
        slot.waiting = true
        queue.append(slot)
        dialNext()
    }

    private func dialNext() {
        guard !stopped, dialer == nil, !queue.isEmpty else { return }
        let slot = queue.removeFirst()
        let dialer = CarrierDialer(target: settings.carrierTarget, loop: loop) { [unowned self] outcome in
            self.dialer = nil
            slot.waiting = false
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
            let label = "#\(slot.index + 1) to \(settings.relay)"
            do {
                let carrier = try Carrier(socket: socket, keys: accepted.keys, role: .client, settings: settings.mux,
                                          relayFeatures: CarrierFeatures(rawValue: accepted.relayFeatures),
                                          keepalive: settings.keepalive, loop: loop, label: label)
                carrier.onClose = { [unowned self] carrier, end in self.lost(slot, carrier, end) }
                slot.carrier = carrier
                slot.backoff = Self.initialBackoffMilliseconds
                connectedOnce = true
                Log.info("carrier \(label) up", "client")
            } catch {
                socket.close()
                retry(slot, after: "\(error)")
            }
        case .failed(let why):
            retry(slot, after: why)
        }
    }

    private func lost(_ slot: Slot, _ carrier: Carrier, _ end: CarrierEnd) {
        guard slot.carrier === carrier else { return }
        slot.carrier = nil
        if stopped { return }
        Log.info("carrier \(carrier.label) down: \(end); reconnecting", "client")
        enqueue(slot)
    }

    private func retry(_ slot: Slot, after why: String) {
        let delay = slot.backoff
        slot.backoff = min(slot.backoff * 2, Self.maxBackoffMilliseconds)
        Log.info("carrier #\(slot.index + 1) to \(settings.relay) failed: \(why); retrying in \(secondsText(delay)) s", "client")
        loop.schedule(afterMilliseconds: delay) { [weak self] in self?.enqueue(slot) }
    }
}

/// "0.1", "12.8": milliseconds as seconds with one decimal, for log lines.
private func secondsText(_ milliseconds: UInt64) -> String {
    let tenths = milliseconds / 100
    return "\(tenths / 10).\(tenths % 10)"
}
