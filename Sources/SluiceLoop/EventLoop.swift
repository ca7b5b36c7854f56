import SluiceSystem
import CSluiceShims
import Glibc
import SluiceLog

/// Readiness bits delivered to an fd handler.
public struct IOEvents: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let readable = IOEvents(rawValue: sluice_epollin())
    public static let writable = IOEvents(rawValue: sluice_epollout())
    public static let error = IOEvents(rawValue: sluice_epollerr())
    public static let hangup = IOEvents(rawValue: sluice_epollhup())
    public static let readHangup = IOEvents(rawValue: sluice_epollrdhup())
    /// Edge-triggered: the handler must read/write until EAGAIN, and is told again only on a new edge.
    public static let edgeTriggered = IOEvents(rawValue: sluice_epollet())
}

/// One thread's epoll loop: fd readiness, timers, end-of-turn hooks and tasks posted from other threads.
///
/// Everything registered here runs on the loop's thread; the loop and its handlers are not Sendable.
/// Other threads reach it only through `handle` (`LoopHandle.execute`). lwIP is owned by one such loop.
public final class EventLoop {
    public typealias Handler = (IOEvents) -> Void

    private let epollFD: Int32
    public let handle: LoopHandle
    private var handlers = DescriptorTable<Handler>()
    private var timers = TimerQueue()
    private var endOfTurn: [(hook: EndOfTurnHook, action: () -> Void)] = []
    private var afterTurnOnce: [OnceAction] = []
    private var afterOutputOnce: [OnceAction] = []
    /// The one-shot actions being run, while new ones gather in `afterTurnOnce` or
    /// `afterOutputOnce`: the arrays swap, so none is copied or reallocated per turn.
    private var onceRunning: [OnceAction] = []
    private var running = false
    /// Extra bound on the sleep, in milliseconds (lwIP's `sys_timeouts_sleeptime`); nil = none.
    public var sleepBound: (() -> UInt32?)?
    /// Busy polling (`--busy-poll`): after a turn that brought events, the loop polls epoll without
    /// sleeping until this many nanoseconds have passed since the last event; 0 = off. A packet that
    /// arrives meanwhile is handled without a wake-up, which on a VM costs tens of µs per hop. With
    /// 200 µs on client and relay (`--workers 1`), two runs each way of `bench.py --modes
    /// kernel,floor,sluice --tests udp,tcp_cc --pairs 0` took a UDP round trip from 99–104 to 55–57 µs
    /// (kernel forwarding 52–56) and a new socket's round trip from 127–133 to 103–107 µs. The price
    /// is a CPU held busy after every burst of traffic, taken from everything else on the host: on two
    /// vCPUs the same runs' one-socket UDP rate fell from 68,518–79,345 to 46,463–64,381 requests/s.
    /// And where polling loops hold every CPU, a request after a pause waits for one: client and relay
    /// polling on those two vCPUs took a round trip 2 ms after the last from 131 to 488 µs (`hops.py
    /// --tests udp_rr --gap-ms 2`, docs/configuration.md "Busy polling").
    public var busyPollNanoseconds: UInt64 = 0
    private var pollUntil: UInt64 = 0

    public init() throws(SystemError) {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw SystemError("epoll_create1") }
        epollFD = fd
        handle = try LoopHandle()
        guard sluice_epoll_ctl(epollFD, EPOLL_CTL_ADD, handle.wakeFD, sluice_epollin(), UInt64(UInt32(bitPattern: handle.wakeFD))) == 0 else {
            close(fd)
            throw SystemError("epoll_ctl(eventfd)")
        }
    }

    deinit { close(epollFD) }

    /// Milliseconds on the monotonic clock.
    public var now: UInt64 { MonotonicClock.milliseconds() }

    /// Watches `fd` for `events`; `handler` runs on this loop's thread when any are ready.
    public func register(fd: Int32, events: IOEvents, handler: @escaping Handler) throws(SystemError) {
        guard sluice_epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, events.rawValue, UInt64(UInt32(bitPattern: fd))) == 0 else {
            throw SystemError("epoll_ctl(add fd \(fd))")
        }
        handlers[fd] = handler
    }

    /// Gives `fd`, registered already, another handler; its events stay as registered. For a
    /// descriptor made and registered ahead of the object that will use it (`UDPSocketReserve` in the
    /// relay): taking it over costs no system call.
    public func replaceHandler(fd: Int32, _ handler: @escaping Handler) {
        precondition(handlers[fd] != nil, "fd \(fd) is not registered")
        handlers[fd] = handler
    }

    /// Stops watching `fd` (call before closing it). Its handler is released.
    public func deregister(fd: Int32) {
        _ = sluice_epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, 0, 0)
        handlers[fd] = nil
    }

    /// Forgets the handler of `fd`, which the caller closes right away: closing an fd no other
    /// descriptor shares removes it from epoll, so the `epoll_ctl` of `deregister` is saved (one
    /// syscall per relay-side connection or UDP association).
    public func forgetBeforeClose(fd: Int32) {
        handlers[fd] = nil
    }

    /// Runs `action` once, `milliseconds` from now, on this loop.
    ///
    /// Objects on the data path capture themselves strongly here (and cancel the timer when they
    /// close) or `unowned` — not `weak`: the first weak reference to an object gives it a side table,
    /// and from then on every retain and release of it takes the Swift runtime's slow path. perf
    /// found that path at 20–45 % of the bench client's time while a carrier held one weak capture.
    @discardableResult
    public func schedule(afterMilliseconds milliseconds: UInt64, _ action: @escaping () -> Void) -> LoopTimer {
        timers.schedule(deadline: now &+ milliseconds, action)
    }

    /// Runs `action` at the end of every loop turn, after all events of the turn: where batched
    /// output (lwIP's `tcp_output`, packets toward the applications) is flushed. Returns the hook,
    /// for `removeEndOfTurnHook` once its owner stops.
    @discardableResult
    public func addEndOfTurnHook(_ action: @escaping () -> Void) -> EndOfTurnHook {
        let hook = EndOfTurnHook()
        endOfTurn.append((hook, action))
        return hook
    }

    /// Stops running a hook `addEndOfTurnHook` added.
    public func removeEndOfTurnHook(_ hook: EndOfTurnHook) {
        endOfTurn.removeAll { $0.hook === hook }
    }

    /// Runs `action` once at the end of the current turn (before the persistent hooks).
    public func afterTurn(_ action: @escaping () -> Void) { afterTurnOnce.append(.closure(action)) }

    /// Runs `action.runTurnAction()` once at the end of the current turn, in order with the closures
    /// queued; for what is queued every turn (`TurnAction`).
    public func afterTurn(_ action: some TurnAction) { afterTurnOnce.append(.object(action)) }

    /// Runs `action` once after the current turn's output went: after its `afterTurn` actions and
    /// end-of-turn hooks, before the loop waits again. For work a turn's output need not wait for —
    /// closing what a new flow evicted, making ready the socket for the next one — so that a request's
    /// packet leaves before it, not after. What `action` queues in turn (`afterTurn` actions, output
    /// for the hooks to flush) goes out before the loop waits, as in any turn: its output cannot fall
    /// behind what the next turn reads.
    public func afterOutput(_ action: @escaping () -> Void) { afterOutputOnce.append(.closure(action)) }

    /// `afterOutput` for an object that queues itself (`TurnAction`).
    public func afterOutput(_ action: some TurnAction) { afterOutputOnce.append(.object(action)) }

    /// A turn's `afterTurn` actions, then the end-of-turn hooks.
    private func finishTurn() {
        while !afterTurnOnce.isEmpty {
            swap(&afterTurnOnce, &onceRunning)
            runOnceActions()
        }
        for entry in endOfTurn { entry.action() }
    }

    /// Runs and empties `onceRunning`. Its actions may queue more, which gather in the other array.
    private func runOnceActions() {
        for action in onceRunning { action.run() }
        onceRunning.removeAll(keepingCapacity: true)
    }

    /// Runs until `stop()`.
    public func run() {
        running = true
        var results = [sluice_epoll_result](repeating: sluice_epoll_result(), count: 128)
        while running {
            let timeout = sleepTimeout()
            let n = results.withUnsafeMutableBufferPointer { sluice_epoll_wait(epollFD, $0.baseAddress, Int32($0.count), timeout) }
            if n < 0 && errno != EINTR {
                Log.error("\(SystemError("epoll_wait")); stopping the loop", "loop")
                return
            }
            if n > 0 && busyPollNanoseconds > 0 { pollUntil = MonotonicClock.nanoseconds() &+ busyPollNanoseconds }
            for i in 0..<max(0, Int(n)) {
                let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: results[i].data))
                if fd == handle.wakeFD {
                    for task in handle.takeTasks() { task() }
                } else if let handler = handlers[fd] {
                    handler(IOEvents(rawValue: results[i].events))
                }
            }
            for action in timers.popDue(now: now) { action() }
            finishTurn()
            while !afterOutputOnce.isEmpty {
                swap(&afterOutputOnce, &onceRunning)
                runOnceActions()
                finishTurn()
            }
        }
    }

    /// Makes `run()` return after the current turn. Loop thread only; from elsewhere use
    /// `handle.execute { loop.stop() }`.
    public func stop() { running = false }

    private func sleepTimeout() -> Int32 {
        if !afterTurnOnce.isEmpty { return 0 }
        if pollUntil != 0 {
            if MonotonicClock.nanoseconds() < pollUntil { return 0 }
            pollUntil = 0
        }
        var timeout: UInt64 = 60_000
        if let deadline = timers.nextDeadline() {
            let t = now
            timeout = deadline > t ? min(timeout, deadline - t) : 0
        }
        if let bound = sleepBound?() { timeout = min(timeout, UInt64(bound)) }
        return Int32(timeout)
    }
}

/// What `afterTurn` and `afterOutput` queue: a closure, or an object that queues itself without one.
private enum OnceAction {
    case closure(() -> Void)
    case object(any TurnAction)

    func run() {
        switch self {
        case .closure(let action): action()
        case .object(let action): action.runTurnAction()
        }
    }
}

/// A hook `EventLoop.addEndOfTurnHook` runs every turn; its identity removes it again.
public final class EndOfTurnHook {
    init() {}
}
