import Dispatch
import Synchronization
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSystem
import SluiceWire

/// The relay's workers (`--workers N`): worker 0 runs on the front's loop (the thread that accepts,
/// does the handshakes and serves the control socket), workers 1..N-1 each on a thread and event
/// loop of their own. With one worker the relay is a single thread, as it always was.
///
/// Why one acceptor that hands carriers over, rather than a SO_REUSEPORT listener per worker: the
/// kernel spreads SO_REUSEPORT connections by a hash of their addresses, so two clients land on the
/// same worker half the time with two workers, and a client's carriers with them; the front places
/// each carrier on the worker with the fewest, so load spreads however few the clients are. And with
/// every handshake on one thread, the allow-list, the replay rule and `--max-pending-handshakes` stay
/// exactly as with one thread. The price is the handshake (two X25519 and a few hashes, tens of µs)
/// on one core per new carrier — carriers are long-lived, so it is paid rarely.
///
/// Loop-confined to the front's loop; it reaches the other workers only through their loops
/// (`WorkerDirectory`), and waits for their answers only where the control socket needs one
/// (`gather`): workers never wait for the front, so that wait cannot deadlock.
final class RelayWorkers {
    /// Worker 0, on the front's loop.
    let local: RelayWorker
    let directory: WorkerDirectory
    let limits: ClientLimits
    private let loads: [WorkerLoad]
    /// Workers 1..N-1.
    private let remote: [LoopBound<RelayWorker>]
    private var threads: [WorkerThread]
    /// The workers have UDP path sockets (message 2 advertises the feature only then).
    let udpPath: Bool

    /// Starts `settings.workers` workers: the first on `loop`, the others each on a thread of its own.
    /// With `udpPathOn` (the listener's endpoint) each gets a UDP path socket there (`PathSocket`).
    init(settings: RelaySettings, loop: EventLoop, udpPathOn: SocketEndpoint?) throws(SystemError) {
        let count = max(1, settings.workers)
        let limits = ClientLimits(workers: count)
        let growth = WindowGrowthPool(bytes: settings.windowGrowthPoolBytes)
        let loads = (0..<count).map { _ in WorkerLoad() }
        let pathSockets = udpPathOn.flatMap { PathSocket.bind($0, workers: count) }
        local = RelayWorker(index: 0, settings: settings, limits: limits, growth: growth, load: loads[0],
                            pathSocket: pathSockets?[0], loop: loop)
        var bound = [LoopBound(local, loop: loop)]
        var threads: [WorkerThread] = []
        for index in 1..<count {
            let started = Started()
            do throws(SystemError) {
                threads.append(try WorkerThread(name: "sluice-worker-\(index)") {
                    let workerLoop: EventLoop
                    do throws(SystemError) {
                        workerLoop = try EventLoop()
                    } catch {
                        started.fail(error)
                        return
                    }
                    let worker = RelayWorker(index: index, settings: settings, limits: limits, growth: growth,
                                             load: loads[index], pathSocket: pathSockets?[index], loop: workerLoop)
                    started.succeed(LoopBound(worker, loop: workerLoop))
                    workerLoop.run()
                })
                bound.append(try started.wait())
            } catch {
                for place in pathSockets?[index...] ?? [] { place.socket.close() }
                local.shutdown()
                Self.stop(Array(bound.dropFirst()), threads: threads)
                throw error
            }
        }
        udpPath = pathSockets != nil
        directory = WorkerDirectory(bound)
        self.limits = limits
        self.loads = loads
        remote = Array(bound.dropFirst())
        self.threads = threads
        local.directory = directory
        for index in 1..<count { directory.execute(on: index) { [directory] in $0.directory = directory } }
    }

    var count: Int { loads.count }

    /// Hands a carrier through its handshake to the worker with the fewest carriers.
    func place(_ handover: CarrierHandover) {
        var chosen = 0
        for index in 1..<loads.count where loads[index].carriers < loads[chosen].carriers { chosen = index }
        loads[chosen].carrierPlaced()
        if chosen == 0 {
            local.adopt(handover)
        } else {
            directory.execute(on: chosen) { $0.adopt(handover) }
        }
    }

    /// Runs `body` on every worker, each on its own loop, and returns their answers in worker order;
    /// worker 0 answers at once. Waits at most two seconds for the others (a worker stuck that long
    /// is left out, with a warning). For the control socket and reload, not the data path.
    func gather<T: Sendable>(_ body: @escaping @Sendable (RelayWorker) -> T) -> [T] {
        var answers = [body(local)]
        guard count > 1 else { return answers }
        let replies = Replies<T>()
        for index in 1..<count {
            directory.execute(on: index) { worker in replies.put(body(worker), at: index) }
        }
        let deadline = DispatchTime.now() + .seconds(2)
        var arrived = 0
        while arrived < count - 1, replies.wait(until: deadline) { arrived += 1 }
        for index in 1..<count {
            if let answer = replies.take(index) {
                answers.append(answer)
            } else {
                Log.warning("worker \(index) did not answer within 2 s; left out", "relay")
            }
        }
        return answers
    }

    /// Closes every worker's carriers, stops the other workers' loops and waits for their threads.
    func shutdown() {
        _ = gather { $0.shutdown() }
        local.directory = nil
        Self.stop(remote, threads: threads)
        threads = []
    }

    private static func stop(_ workers: [LoopBound<RelayWorker>], threads: [WorkerThread]) {
        for worker in workers {
            worker.execute {
                $0.shutdown()
                $0.loop.stop()
            }
        }
        for thread in threads { thread.join() }
    }
}

/// A worker thread's start, as its starter waits for it: its worker, or why it has none.
private final class Started: Sendable {
    private let result = Mutex<Result<LoopBound<RelayWorker>, SystemError>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func succeed(_ worker: LoopBound<RelayWorker>) {
        result.withLock { $0 = .success(worker) }
        done.signal()
    }

    func fail(_ error: SystemError) {
        result.withLock { $0 = .failure(error) }
        done.signal()
    }

    func wait() throws(SystemError) -> LoopBound<RelayWorker> {
        done.wait()
        return try result.withLock { $0! }.get()
    }
}

/// Answers of the workers to one `gather`, as they come in on their threads.
private final class Replies<T: Sendable>: Sendable {
    private let answers: Mutex<[Int: T]>
    private let arrived = DispatchSemaphore(value: 0)

    init() { answers = Mutex([:]) }

    func put(_ answer: T, at index: Int) {
        answers.withLock { $0[index] = answer }
        arrived.signal()
    }

    /// Waits for one more answer (any worker's); false at the deadline.
    func wait(until deadline: DispatchTime) -> Bool { arrived.wait(timeout: deadline) == .success }

    func take(_ index: Int) -> T? { answers.withLock { $0[index] } }
}
