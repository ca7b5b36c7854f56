import Foundation
import Glibc
import XCTest

@testable import SluiceHost

/// Base class for tests that change network configuration. They need root, and they must never
/// touch the host's own interfaces, routes or rules.
///
/// Isolation: before the first such test, the whole test process moves into a fresh network
/// namespace with `unshare(CLONE_NEWNET)`. A namespace created this way has no name and no bind
/// mount, so it dies with the process: whatever a test creates in it (TUNs, addresses, routes,
/// rules) cannot leak, even if the test crashes or fails half-way. Tests still clean up after
/// themselves so they do not disturb each other.
///
/// `unshare(CLONE_NEWNET)` moves only the calling thread. XCTest on Linux runs `class setUp` and
/// the test methods on the process's main thread, and `Foundation.Process` spawns `ip` from the
/// calling thread, so everything the tests do happens inside. `setUpWithError` checks that for
/// every test (the thread's `/proc/thread-self/ns/net` must be the new namespace and differ from
/// the one the process started in) and fails the test, rather than run it on the host, otherwise.
class NamespacedTestCase: XCTestCase {
    override class func setUp() {
        super.setUp()
        _ = TestNamespace.entered
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try TestNamespace.requireInside()
    }
}

/// The process-wide move into a fresh network namespace (see `NamespacedTestCase`).
enum TestNamespace {
    /// The namespace inode before the move.
    static let original = inode("/proc/thread-self/ns/net")

    /// The new namespace's inode, or why the tests must be skipped.
    static let entered: Result<UInt64, Skip> = enter()

    struct Skip: Error, CustomStringConvertible {
        let description: String
    }

    struct NotIsolated: Error, CustomStringConvertible {
        let description: String
    }

    private static func enter() -> Result<UInt64, Skip> {
        guard geteuid() == 0 else { return .failure(Skip(description: "needs root (CAP_NET_ADMIN) for TUN and netlink")) }
        guard Thread.isMainThread else { return .failure(Skip(description: "not on the main thread; cannot isolate the test process")) }
        let before = original
        guard let unshare = unshareFunction() else { return .failure(Skip(description: "libc has no unshare(2)")) }
        guard unshare(cloneNewNet) == 0 else {
            return .failure(Skip(description: "unshare(CLONE_NEWNET) failed: \(String(cString: strerror(errno)))"))
        }
        let after = inode("/proc/thread-self/ns/net")
        guard after != before, after != 0 else { return .failure(Skip(description: "unshare(CLONE_NEWNET) did not change the namespace")) }
        // A fresh namespace has lo down. Foundation needs it up: its run loop (used by Process)
        // makes its wake-up sockets on 127.0.0.1, and fails and hangs without it.
        do {
            try NetlinkSocket().setLink("lo", up: true)
        } catch {
            return .failure(Skip(description: "cannot bring lo up in the test namespace: \(error)"))
        }
        return .success(after)
    }

    /// Throws `XCTSkip` without root; throws a failure if the calling thread is not in the test
    /// namespace (so a test never runs against the host's network configuration).
    static func requireInside() throws {
        switch entered {
        case .failure(let skip):
            throw XCTSkip(skip.description)
        case .success(let namespace):
            let here = inode("/proc/thread-self/ns/net")
            guard here == namespace, here != original else {
                throw NotIsolated(description: "this thread is in network namespace \(here), not the test namespace \(namespace)")
            }
        }
    }

    /// `CLONE_NEWNET` from <sched.h>, which Swift's Glibc module does not export (it needs _GNU_SOURCE).
    private static let cloneNewNet: Int32 = 0x4000_0000

    /// libc's `unshare(2)`, looked up at run time for the same reason; tests only, so no C shim.
    private static func unshareFunction() -> (@convention(c) (Int32) -> Int32)? {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "unshare") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
    }

    static func inode(_ path: String) -> UInt64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return UInt64(info.st_ino)
    }
}
