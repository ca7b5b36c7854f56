import Glibc
import SluiceLoop
import XCTest

/// The order of one loop turn: events and due timers, `afterTurn` actions, the end-of-turn hooks, then
/// `afterOutput` actions — whose own output goes out before the loop reads anything more.
final class TurnOrderTests: XCTestCase {
    /// A pipe, [read end, write end], closed when the test ends; the read end is deregistered from
    /// `loop` then (the test registers it).
    private func pipe(watchedBy loop: EventLoop) -> [Int32] {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(Glibc.pipe(&fds), 0)
        addTeardownBlock {
            loop.deregister(fd: fds[0])
            close(fds[0])
            close(fds[1])
        }
        return fds
    }

    func testAfterOutputRunsAfterTheHooksAndWhatItQueuesLeavesBeforeTheNextEvent() throws {
        let loop = try EventLoop()
        let fds = pipe(watchedBy: loop)
        var log: [String] = []
        let hook = loop.addEndOfTurnHook { log.append("hook") }
        defer { loop.removeEndOfTurnHook(hook) }
        var events = 0
        try loop.register(fd: fds[0], events: [.readable]) { _ in
            var byte: UInt8 = 0
            _ = read(fds[0], &byte, 1)
            events += 1
            guard events == 1 else {
                log.append("next event")
                loop.stop()
                return
            }
            log.append("event")
            loop.afterOutput {
                log.append("after output")
                loop.afterTurn { log.append("queued by it") }
                loop.afterOutput { log.append("after output, queued by it") }
                // An event ready as the turn ends: the next turn's, after what was queued above.
                var byte: UInt8 = 2
                _ = write(fds[1], &byte, 1)
            }
            loop.afterTurn {
                log.append("after turn")
                loop.afterTurn { log.append("after turn, queued by it") }
            }
        }
        var byte: UInt8 = 1
        XCTAssertEqual(write(fds[1], &byte, 1), 1)
        loop.run()
        XCTAssertEqual(log, ["event", "after turn", "after turn, queued by it", "hook", "after output", "queued by it", "hook",
                             "after output, queued by it", "hook", "next event", "hook"])
    }

    /// An object queued with `afterTurn(_:)` or `afterOutput(_:)` (`TurnAction`) runs in order with
    /// the closures queued, once for each time it was queued, and the loop holds it until it has run:
    /// one queued with no other reference runs, and is freed after.
    func testTurnActionsRunInOrderWithClosuresAndAreHeldUntilTheyRan() throws {
        final class Entry: TurnAction {
            let name: String
            let log: TurnLog
            init(_ name: String, _ log: TurnLog) { self.name = name; self.log = log }
            func runTurnAction() { log.lines.append(name) }
        }
        let loop = try EventLoop()
        let log = TurnLog()
        weak var unheld: Entry?
        loop.afterTurn { log.lines.append("closure 1") }
        let kept = Entry("object", log)
        loop.afterTurn(kept)
        loop.afterTurn { log.lines.append("closure 2") }
        loop.afterTurn(kept)
        do {
            let entry = Entry("unheld", log)
            unheld = entry
            loop.afterOutput(entry)
        }
        XCTAssertNotNil(unheld, "queued: the loop holds it")
        loop.afterOutput { loop.stop() }
        loop.run()
        XCTAssertEqual(log.lines, ["closure 1", "object", "closure 2", "object", "unheld"])
        XCTAssertNil(unheld, "released once it ran")
    }

    func testReplaceHandlerGivesARegisteredDescriptorAnotherHandler() throws {
        let loop = try EventLoop()
        let fds = pipe(watchedBy: loop)
        var heard: [String] = []
        try loop.register(fd: fds[0], events: [.readable]) { _ in heard.append("first") }
        loop.replaceHandler(fd: fds[0]) { _ in
            heard.append("second")
            var byte: UInt8 = 0
            _ = read(fds[0], &byte, 1)
            loop.stop()
        }
        var byte: UInt8 = 1
        XCTAssertEqual(write(fds[1], &byte, 1), 1)
        loop.run()
        XCTAssertEqual(heard, ["second"])
    }
}

/// A log the actions of a test append to (a class, so closures and objects share it).
private final class TurnLog {
    var lines: [String] = []
}
