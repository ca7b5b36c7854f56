import Synchronization

/// The carriers a worker serves, as the front counts them to place the next one: raised by the
/// front when it hands a carrier over, lowered by the worker when one closes. Thread-safe.
final class WorkerLoad: Sendable {
    private let count = Atomic<Int>(0)

    init() {}

    var carriers: Int { count.load(ordering: .relaxed) }

    func carrierPlaced() { count.add(1, ordering: .relaxed) }

    func carrierClosed() { count.subtract(1, ordering: .relaxed) }
}
