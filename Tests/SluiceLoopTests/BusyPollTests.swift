import SluiceLoop
import SluiceSystem
import XCTest

/// `EventLoop.busyPollNanoseconds` (`--busy-poll`): after a turn that brought events the loop keeps
/// turning without sleeping for the poll window, then sleeps again; off, it sleeps at once.
final class BusyPollTests: XCTestCase {
    /// The loop's turns, in nanoseconds since one event was posted, until a timer stops it after
    /// `runMilliseconds`.
    private func turns(busyPollMilliseconds: UInt64, runMilliseconds: UInt64) throws -> [UInt64] {
        let loop = try EventLoop()
        loop.busyPollNanoseconds = busyPollMilliseconds * 1_000_000
        let start = MonotonicClock.nanoseconds()
        var turns: [UInt64] = []
        let hook = loop.addEndOfTurnHook { turns.append(MonotonicClock.nanoseconds() - start) }
        defer { loop.removeEndOfTurnHook(hook) }
        loop.handle.execute {}  // one event: the loop's eventfd
        _ = loop.schedule(afterMilliseconds: runMilliseconds) { loop.stop() }
        loop.run()
        return turns
    }

    func testPollsAfterAnEventForTheWindowThenSleeps() throws {
        let polled = try turns(busyPollMilliseconds: 20, runMilliseconds: 60)
        let inWindow = polled.filter { $0 < 15_000_000 }.count
        let afterWindow = polled.filter { $0 > 30_000_000 }.count
        XCTAssertGreaterThan(inWindow, 100, "the loop turned \(inWindow) times in the poll window: it slept")
        XCTAssertLessThanOrEqual(afterWindow, 2, "the loop turned \(afterWindow) times after its window: it kept polling")

        let slept = try turns(busyPollMilliseconds: 0, runMilliseconds: 60)
        XCTAssertLessThanOrEqual(slept.count, 4, "off, the loop sleeps between the event and its timer: \(slept.count) turns")
    }

    /// Only events start a window: a timer firing on an idle loop does not.
    func testATimerAloneStartsNoWindow() throws {
        let loop = try EventLoop()
        loop.busyPollNanoseconds = 20_000_000
        var turns = 0
        let hook = loop.addEndOfTurnHook { turns += 1 }
        defer { loop.removeEndOfTurnHook(hook) }
        _ = loop.schedule(afterMilliseconds: 5) {}
        _ = loop.schedule(afterMilliseconds: 30) { loop.stop() }
        loop.run()
        XCTAssertLessThanOrEqual(turns, 4, "\(turns) turns: a timer started a poll window")
    }
}
