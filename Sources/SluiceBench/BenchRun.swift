import SluiceCarrier
import SluiceCrypto
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSystem
import SluiceTunnel

/// `sluice bench`: dials the carriers with the client's own dialer and handshake, measures each
/// direction against the relay's bench endpoints (`BenchPhase`), and closes everything again.
/// Needs no TUN, no routes and no privileges. Loop-confined; `run(_:progress:)` is the entry point.
public final class BenchRun {
    private let settings: BenchSettings
    private unowned let loop: EventLoop
    private let progress: (String) -> Void
    private var carriers: [Carrier] = []
    private var dialer: CarrierDialer?
    private var phase: BenchPhase?
    private var handshake: UInt64 = 0
    /// OPEN to OPEN_OK of the first stream of the first direction, opened while the carriers are idle.
    private var firstOpen: UInt64 = 0
    private var results: [BenchReport.Phase] = []
    private var outcome: Result<BenchReport, BenchError>?

    init(settings: BenchSettings, loop: EventLoop, progress: @escaping (String) -> Void) {
        self.settings = settings
        self.loop = loop
        self.progress = progress
    }

    /// Runs the whole measurement on the calling thread. `progress` gets one line per second of
    /// each direction.
    public static func run(_ settings: BenchSettings, progress: @escaping (String) -> Void) throws(BenchError) -> BenchReport {
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw .system("\(error)") }
        let bench = BenchRun(settings: settings, loop: loop, progress: progress)
        bench.dialNext()
        if bench.outcome == nil { loop.run() }
        return try bench.outcome!.get()
    }

    // MARK: carriers

    private func dialNext() {
        let started = MonotonicClock.nanoseconds()
        let dialer = CarrierDialer(target: settings.target, loop: loop) { [unowned self] outcome in
            self.dialer = nil
            switch outcome {
            case .failed(let failure):
                self.finish(.failure(.dial(relay: self.settings.target.relay, failure)))
            case .established(let socket, let accepted):
                if self.carriers.isEmpty { self.handshake = MonotonicClock.nanoseconds() - started }
                self.established(socket, accepted)
            }
        }
        self.dialer = dialer
        dialer.start()
    }

    private func established(_ socket: Socket, _ accepted: SluiceAcceptance) {
        let label = "#\(carriers.count + 1) to \(settings.target.relay)"
        do {
            let carrier = try Carrier(socket: socket, keys: accepted.keys, role: .client, settings: settings.mux,
                                      relayFeatures: CarrierFeatures(rawValue: accepted.relayFeatures),
                                      keepalive: .client, loop: loop, label: label)
            carrier.onClose = { [unowned self] (_: Carrier, end: CarrierEnd) in self.finish(.failure(.carrierLost("carrier \(label): \(end)"))) }
            carriers.append(carrier)
            Log.debug("carrier \(label) up", "bench")
        } catch {
            socket.close()
            finish(.failure(.system("carrier \(label): \(error)")))
            return
        }
        if carriers.count < settings.carriers { dialNext() } else { nextPhase() }
    }

    // MARK: directions

    private func nextPhase() {
        guard outcome == nil else { return }
        guard results.count < settings.phases.count else {
            finish(.success(BenchReport(relay: settings.target.relay, carriers: settings.carriers, streams: settings.streams,
                                        handshakeNanoseconds: handshake, openNanoseconds: firstOpen, phases: results)))
            return
        }
        let phase = BenchPhase(direction: settings.phases[results.count], settings: settings, loop: loop, progress: progress) {
            [unowned self] result in
            if self.results.isEmpty { self.firstOpen = self.phase?.streams.first?.openNanoseconds ?? 0 }
            self.phase = nil
            switch result {
            case .success(let figures):
                self.results.append(figures)
                self.nextPhase()
            case .failure(let error):
                self.finish(.failure(error))
            }
        }
        self.phase = phase
        phase.start(on: carriers)
    }

    private func finish(_ result: Result<BenchReport, BenchError>) {
        guard outcome == nil else { return }
        outcome = result
        dialer?.cancel()
        dialer = nil
        phase?.abort()
        phase = nil
        for carrier in carriers {
            carrier.onClose = nil
            carrier.close(.localShutdown)
        }
        carriers.removeAll()
        loop.stop()
    }
}
