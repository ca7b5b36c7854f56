/// A cancellable one-shot timer of an `EventLoop`. Loop-confined.
public final class LoopTimer {
    let deadline: UInt64
    let sequence: UInt64
    fileprivate(set) var action: (() -> Void)?

    init(deadline: UInt64, sequence: UInt64, action: @escaping () -> Void) {
        self.deadline = deadline
        self.sequence = sequence
        self.action = action
    }

    /// Stops the timer from firing. Safe to call more than once, and from inside its own action.
    public func cancel() { action = nil }

    public var isPending: Bool { action != nil }
}

/// Binary min-heap of timers by deadline (ties in scheduling order). Cancelled timers stay in the heap
/// until they reach the top, which keeps `cancel()` O(1).
struct TimerQueue {
    private var heap: [LoopTimer] = []
    private var nextSequence: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }

    mutating func schedule(deadline: UInt64, _ action: @escaping () -> Void) -> LoopTimer {
        nextSequence &+= 1
        let timer = LoopTimer(deadline: deadline, sequence: nextSequence, action: action)
        heap.append(timer)
        siftUp(heap.count - 1)
        return timer
    }

    /// Deadline of the earliest live timer, dropping cancelled ones from the top.
    mutating func nextDeadline() -> UInt64? {
        while let top = heap.first, top.action == nil { _ = popTop() }
        return heap.first?.deadline
    }

    /// Removes and returns the actions of all live timers due at `now`, earliest first.
    mutating func popDue(now: UInt64) -> [() -> Void] {
        var due: [() -> Void] = []
        while let top = heap.first, top.deadline <= now {
            _ = popTop()
            if let action = top.action {
                top.action = nil
                due.append(action)
            }
        }
        return due
    }

    private static func before(_ a: LoopTimer, _ b: LoopTimer) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }

    private mutating func popTop() -> LoopTimer {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
        return top
    }

    private mutating func siftUp(_ index: Int) {
        var i = index
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.before(heap[i], heap[parent]) else { return }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var i = index
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < heap.count && Self.before(heap[l], heap[smallest]) { smallest = l }
            if r < heap.count && Self.before(heap[r], heap[smallest]) { smallest = r }
            if smallest == i { return }
            heap.swapAt(i, smallest)
            i = smallest
        }
    }
}
