import Synchronization
import SluiceLoop

/// Every worker of a relay, reachable from any thread: a task posted here runs on that worker's
/// loop. How workers ask each other (a UDP mapping to evict) and how the front reaches them.
final class WorkerDirectory: Sendable {
    private let workers: [LoopBound<RelayWorker>]

    init(_ workers: [LoopBound<RelayWorker>]) { self.workers = workers }

    var count: Int { workers.count }

    /// Runs `body` with worker `index` on its loop, at its next turn. Callable from any thread.
    func execute(on index: Int, _ body: @escaping @Sendable (RelayWorker) -> Void) {
        workers[index].execute(body)
    }
}

/// The carriers a worker serves, as the front counts them to place the next one: raised by the
/// front when it hands a carrier over, lowered by the worker when one closes. Thread-safe.
final class WorkerLoad: Sendable {
    private let count = Atomic<Int>(0)

    init() {}

    var carriers: Int { count.load(ordering: .relaxed) }

    func carrierPlaced() { count.add(1, ordering: .relaxed) }

    func carrierClosed() { count.subtract(1, ordering: .relaxed) }
}
