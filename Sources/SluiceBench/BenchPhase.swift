import SluiceCarrier
import SluiceLoop
import SluiceMux
import SluiceSystem

/// One direction of `sluice bench`: opens the streams, starts the clock at the first OPEN_OK,
/// reports the rate once a second, sends FIN to every stream when the time is up, and ends when the
/// relay has finished them all. Loop-confined; reports exactly once.
///
/// What counts: upload bytes the relay consumed (its FIN follows its last credit), download bytes
/// received; the time runs from the first OPEN_OK to the last of the relay's FINs, so the tail
/// drained after the deadline is counted with the time it took.
final class BenchPhase {
    let direction: BenchDirection
    private unowned let loop: EventLoop
    private let settings: BenchSettings
    private let progress: (String) -> Void
    private var completion: ((Result<BenchReport.Phase, BenchError>) -> Void)?
    private(set) var streams: [BenchStream] = []
    private var started: UInt64?
    private var lastTick: (time: UInt64, bytes: Int) = (0, 0)
    private var timers: [LoopTimer] = []
    private var finished = 0

    init(direction: BenchDirection, settings: BenchSettings, loop: EventLoop, progress: @escaping (String) -> Void,
         completion: @escaping (Result<BenchReport.Phase, BenchError>) -> Void) {
        self.direction = direction
        self.settings = settings
        self.loop = loop
        self.progress = progress
        self.completion = completion
    }

    /// Opens `settings.streams` streams, round-robin over `carriers`.
    func start(on carriers: [Carrier]) {
        streams = (0..<settings.streams).map { _ in BenchStream(direction: direction, phase: self) }
        for (index, stream) in streams.enumerated() { stream.open(on: carriers[index % carriers.count]) }
        let timeout = settings.answerTimeoutMilliseconds
        timers.append(loop.schedule(afterMilliseconds: timeout) {
            guard self.streams.contains(where: { $0.openNanoseconds == nil }) else { return }
            self.fail(.noAnswer(self.direction.service, seconds: timeout / 1000))
        })
    }

    /// Stops everything without reporting (another phase or a carrier failed).
    func abort() {
        completion = nil
        for timer in timers { timer.cancel() }
        for stream in streams where !stream.isDone { stream.abort() }
    }

    // MARK: called by BenchStream

    func streamOpened(_ stream: BenchStream) {
        guard started == nil else { return }
        let now = MonotonicClock.nanoseconds()
        started = now
        lastTick = (now, 0)
        timers.append(loop.schedule(afterMilliseconds: settings.durationMilliseconds) { self.timeIsUp() })
        scheduleTick()
    }

    func streamFinished(_ stream: BenchStream) {
        finished += 1
        guard finished == streams.count, let started, let done = completion else { return }
        completion = nil
        for timer in timers { timer.cancel() }
        let bytes = streams.reduce(0) { $0 + $1.bytes }
        done(.success(BenchReport.Phase(direction: direction, bytes: bytes, nanoseconds: MonotonicClock.nanoseconds() - started)))
    }


    // MARK: the clock

    private func scheduleTick() {
        timers.append(loop.schedule(afterMilliseconds: 1000) { self.tick() })
    }

    /// One progress line: the rate over the last second, as iperf3 prints its intervals. The
    /// deadline prints the last (perhaps shorter) interval instead.
    private func tick() {
        guard let started, completion != nil else { return }
        let now = MonotonicClock.nanoseconds()
        guard now - started + 50_000_000 < settings.durationMilliseconds * 1_000_000 else { return }
        report(now: now, started: started)
        scheduleTick()
    }

    private func report(now: UInt64, started: UInt64) {
        let bytes = streams.reduce(0) { $0 + $1.confirmedBytes }
        let rate = Double(bytes - lastTick.bytes) * 8 / (Double(now - lastTick.time) / 1e9)
        lastTick = (now, bytes)
        let elapsed = BenchReport.fixed(Double(now - started) / 1e9, 1)
        progress("[" + BenchReport.padded(elapsed, 5, left: true) + " s] " + BenchReport.padded(direction.rawValue, 4)
                 + BenchReport.padded(BenchReport.rate(rate), 14, left: true))
    }

    private func timeIsUp() {
        let now = MonotonicClock.nanoseconds()
        if let started, now - lastTick.time > 50_000_000 { report(now: now, started: started) }
        for stream in streams { stream.stop() }
        let timeout = settings.answerTimeoutMilliseconds
        timers.append(loop.schedule(afterMilliseconds: timeout) {
            self.fail(.unfinished(self.direction, seconds: timeout / 1000))
        })
    }

    /// Ends the phase with `error` (also called by a stream that was reset).
    func fail(_ error: BenchError) {
        guard let done = completion else { return }
        abort()
        done(.failure(error))
    }
}
