import CSluiceShims
import Glibc
import Synchronization

/// The one part of an `EventLoop` other threads may touch: a task queue plus an eventfd wake-up.
/// Sendable by construction (a Mutex and an fd), so no `@unchecked` is needed anywhere else.
public final class LoopHandle: Sendable {
    let wakeFD: Int32
    private let tasks = Mutex<[@Sendable () -> Void]>([])

    init() throws(SystemError) {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw SystemError("eventfd") }
        wakeFD = fd
    }

    deinit { close(wakeFD) }

    /// Runs `task` on the loop's thread at its next turn. Callable from any thread.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        let wasEmpty = tasks.withLock { queue in
            queue.append(task)
            return queue.count == 1
        }
        if wasEmpty { wake() }
    }

    func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Drains the wake-up counter and returns the queued tasks. Loop thread only.
    func takeTasks() -> [@Sendable () -> Void] {
        var counter: UInt64 = 0
        _ = read(wakeFD, &counter, 8)
        return tasks.withLock { queue in
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
    }
}
