import Synchronization

/// What each client holds and opens, counted across all of the relay's workers: its open streams
/// (`--max-streams`), its UDP mappings (`--max-udp-mappings`) and the token bucket of its stream
/// opens (`--max-stream-rate`). A client's carriers may sit on different workers, so these are per
/// relay, not per worker. Thread-safe: one lock around one small table, taken once per stream or
/// association opened or closed — never per record or per byte.
///
/// The table keeps one entry per client that was ever served (its rate bucket is kept when its
/// carriers close, so that dialling again buys no fresh burst), so it is bounded by the allow-list.
final class ClientLimits: Sendable {
    private struct Usage {
        var streams = 0
        /// UDP mappings, per worker (indexed by `RelayWorker.index`): at the cap, the worker that
        /// evicts is one that holds some.
        var mappings: [Int]
        var openRate: TokenBucket?
    }

    private let workers: Int
    private let table = Mutex<[ClientID: Usage]>([:])

    init(workers: Int) {
        precondition(workers > 0, "a relay without workers")
        self.workers = workers
    }

    // MARK: streams

    /// Takes one of `client`'s stream slots if it holds fewer than `cap`; false at the cap. Check
    /// and take are one step, so two workers cannot both take the last slot.
    func takeStreamSlot(_ client: ClientID, cap: Int) -> Bool {
        update(client) { usage in
            guard usage.streams < cap else { return false }
            usage.streams += 1
            return true
        }
    }

    func releaseStreamSlot(_ client: ClientID) {
        update(client) { usage in
            guard usage.streams > 0 else {
                assertionFailure("a stream slot released twice")
                return
            }
            usage.streams -= 1
        }
    }

    /// Streams `client` has open, on all workers.
    func streams(of client: ClientID) -> Int { table.withLock { $0[client]?.streams ?? 0 } }

    // MARK: UDP mappings

    /// Counts a new mapping of `client` on worker `worker`. When the client now holds more than
    /// `cap`, returns the worker that should evict its longest-idle mapping: `worker` itself if it
    /// holds another, else the one holding the most. nil when under the cap.
    func addMapping(_ client: ClientID, on worker: Int, cap: Int) -> Int? {
        update(client) { usage in
            usage.mappings[worker] += 1
            guard usage.mappings.reduce(0, +) > cap else { return nil }
            if usage.mappings[worker] > 1 { return worker }
            let others = usage.mappings.indices.filter { $0 != worker && usage.mappings[$0] > 0 }
            return others.max { usage.mappings[$0] < usage.mappings[$1] } ?? worker
        }
    }

    func removeMapping(_ client: ClientID, on worker: Int) {
        update(client) { usage in
            guard usage.mappings[worker] > 0 else {
                assertionFailure("a UDP mapping removed twice")
                return
            }
            usage.mappings[worker] -= 1
        }
    }

    /// UDP mappings `client` holds, on all workers.
    func udpMappings(of client: ClientID) -> Int { table.withLock { $0[client]?.mappings.reduce(0, +) ?? 0 } }

    // MARK: stream rate

    /// Takes one token from `client`'s bucket (made at `rate` if it has none) and returns how many
    /// milliseconds its carriers should wait before reading on (0 when it is not in debt).
    func takeOpen(_ client: ClientID, rate: Int, now: UInt64) -> UInt64 {
        update(client) { usage in
            var bucket = usage.openRate ?? TokenBucket(rate: rate, now: now)
            bucket.take(now: now)
            usage.openRate = bucket
            return bucket.wait(now: now)
        }
    }

    /// Runs `body` on `client`'s entry (made if it has none) in place, under the lock. An entry taken
    /// out and written back copied its `mappings` array on every change and looked the client up
    /// twice: ~1,000 instructions per call, three calls per new UDP mapping at the cap (callgrind on
    /// the relay under `Benchmarks/e2e/reqcpu.py --test udp-new`).
    private func update<Result: Sendable>(_ client: ClientID, _ body: (inout Usage) -> Result) -> Result {
        table.withLock { table in
            body(&table[client, default: Usage(mappings: Array(repeating: 0, count: workers))])
        }
    }

    /// Forgets every client's bucket: a reload changed `--max-stream-rate`.
    func resetRates() {
        table.withLock { table in
            for client in Array(table.keys) { table[client]?.openRate = nil }
        }
    }
}
