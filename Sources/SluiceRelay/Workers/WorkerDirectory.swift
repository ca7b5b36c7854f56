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
