import Foundation
import Glibc
import SluiceCrypto
import SluiceLoop
import SluiceWire
import XCTest

@testable import SluiceRelay

/// A relay with several workers in one process: each worker runs on a thread of its own, a reload
/// reaches every one of them on its own loop, status asks them all, and shutdown ends their threads.
/// (Carriers spread over workers, and the per-client caps across them, are checked end to end with
/// real clients, in Tests/E2E/test_workers.py.)
final class RelayWorkersTests: XCTestCase {
    let client = PrivateKey.generate().publicKey

    func settings(workers: Int) -> RelaySettings {
        var settings = RelaySettings(listen: SocketEndpoint(address: IPAddress("127.0.0.1")!, port: 0), privateKey: PrivateKey.generate(),
                                     allowedClients: [client], psk: nil, maxStreamsPerClient: 8, handshakeTimeoutMilliseconds: 1000)
        settings.workers = workers
        return settings
    }

    /// Threads of this process named as relay workers name theirs ("sluice-worker-N", in
    /// /proc/self/task/*/comm). Not all threads: other threads of the test process (Dispatch's) come
    /// and go while a test runs.
    func workerThreadCount() -> Int {
        guard let dir = opendir("/proc/self/task") else { return -1 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            let tid = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard !tid.hasPrefix("."), let comm = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8) else { continue }
            if comm.hasPrefix("sluice-worker-") { count += 1 }
        }
        return count
    }

    func testEveryWorkerRunsOnAThreadOfItsOwnAndStopsWithTheRelay() throws {
        let before = workerThreadCount()
        let loop = try EventLoop()
        let relay = try RelayServer(settings: settings(workers: 3), loop: loop)
        // Each worker has run a block here, so each thread has named itself.
        let threads = relay.workers.gather { _ in Int(pthread_self()) }
        XCTAssertEqual(Set(threads).count, 3, "three workers, three threads")
        XCTAssertEqual(threads[0], Int(pthread_self()))
        XCTAssertEqual(workerThreadCount(), before + 2, "worker 0 runs on the caller's loop, workers 1 and 2 on threads")
        XCTAssertEqual(relay.statistics().workers, [0, 0, 0])
        relay.shutdown()
        // pthread_join returns once a thread has cleared its tid on exit, a moment before the kernel
        // removes it from /proc/self/task.
        var left = workerThreadCount()
        for _ in 0..<200 where left != before {
            usleep(5_000)
            left = workerThreadCount()
        }
        XCTAssertEqual(left, before, "shutdown ended the workers' threads")
    }

    func testOneWorkerIsTheCallersThreadAlone() throws {
        let before = workerThreadCount()
        let loop = try EventLoop()
        let relay = try RelayServer(settings: settings(workers: 1), loop: loop)
        defer { relay.shutdown() }
        XCTAssertEqual(relay.workers.gather { _ in Int(pthread_self()) }, [Int(pthread_self())])
        XCTAssertEqual(workerThreadCount(), before)
        XCTAssertEqual(relay.statistics().workers, [0])
    }

    func testReloadReachesEveryWorkerOnItsOwnLoop() throws {
        let loop = try EventLoop()
        var next = settings(workers: 2)
        next.maxStreamsPerClient = 2
        next.destinationPolicy = DestinationPolicy(allow: [IPPrefix("127.0.0.1/32")!])
        let proposed = next
        let relay = try RelayServer(settings: settings(workers: 2), loop: loop, settingsSource: { proposed })
        defer { relay.shutdown() }
        guard case .applied(let report) = relay.reload() else { return XCTFail("a good configuration was refused") }
        XCTAssertTrue(report.policyChanged)
        let seen = relay.workers.gather { worker in
            (worker.settings.maxStreamsPerClient, worker.settings.destinationPolicy.refusal(of: IPAddress("127.0.0.1")!) == nil)
        }
        XCTAssertEqual(seen.map(\.0), [2, 2], "both workers hold the new cap")
        XCTAssertEqual(seen.map(\.1), [true, true], "and the new policy")
    }

    /// Every worker's carriers draw on one pool of window growth, of the size the relay started with,
    /// and a reload that brings other settings leaves them on it.
    func testAllWorkersCarriersShareOnePoolOfWindowGrowthThroughAReload() throws {
        let loop = try EventLoop()
        var first = settings(workers: 2)
        first.windowGrowthPoolBytes = 3 * 1024 * 1024
        var next = first
        next.maxStreamsPerClient = 2
        next.windowGrowthPoolBytes = 1024
        let proposed = next
        let relay = try RelayServer(settings: first, loop: loop, settingsSource: { proposed })
        defer { relay.shutdown() }
        func pools() -> [ObjectIdentifier?] {
            relay.workers.gather { $0.carrierSettings.windowGrowthPool.map(ObjectIdentifier.init) }
        }
        let before = pools()
        XCTAssertNotNil(before[0])
        XCTAssertEqual(Set(before).count, 1, "one pool for both workers")
        XCTAssertEqual(relay.workers.local.growth.bytes, 3 * 1024 * 1024)
        guard case .applied = relay.reload() else { return XCTFail("a good configuration was refused") }
        XCTAssertEqual(relay.workers.gather { $0.settings.maxStreamsPerClient }, [2, 2], "the reload reached both")
        XCTAssertEqual(pools(), before, "the same pool after the reload")
        XCTAssertEqual(relay.workers.local.growth.bytes, 3 * 1024 * 1024)
    }

    func testChangingTheNumberOfWorkersTakesARestart() throws {
        let loop = try EventLoop()
        let proposed = settings(workers: 3)
        let relay = try RelayServer(settings: settings(workers: 2), loop: loop, settingsSource: { proposed })
        defer { relay.shutdown() }
        guard case .applied(let report) = relay.reload() else { return XCTFail("a good configuration was refused") }
        XCTAssertEqual(report.needingRestart, ["--workers 3 takes a restart; still 2 worker(s)"])
        XCTAssertEqual(relay.workers.count, 2)
        XCTAssertEqual(relay.settings.workers, 2)
    }
}
