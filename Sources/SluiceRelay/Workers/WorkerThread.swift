import CSluiceShims
import Glibc
import SluiceSystem

/// A named thread that runs one body to its end, and `join()` to wait for it. The relay's workers
/// other than the first each run their event loop on one (`RelayWorkers`). A pthread of its own
/// rather than Dispatch: a worker loop blocks in `epoll_wait` for its whole life, which is what a
/// dedicated thread is for, and its name (`sluice-worker-N`, in /proc/PID/task/*/comm and `top -H`)
/// tells the operator which worker uses the CPU.
final class WorkerThread: Sendable {
    private let thread: pthread_t

    /// Starts `body` on a new thread named `name` (at most 15 bytes: the kernel's limit).
    init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        final class Box: Sendable {
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let box = Unmanaged.passRetained(Box(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            _ = sluice_set_thread_name(String(box.name.utf8.prefix(15))!)
            box.body()
            return nil
        }, box)
        guard result == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw SystemError("pthread_create(\(name))", code: result)
        }
        self.thread = thread
    }

    /// Waits until the body has returned. Once, from another thread.
    func join() {
        _ = pthread_join(thread, nil)
    }
}
