import SluiceLoop
import SluiceWire

/// What sends the datagrams a `DatagramBatch` held: an association's socket.
protocol DatagramSender: AnyObject {
    /// Sends `payload` to `endpoint` now; one that can no longer send drops it.
    func send(_ payload: UnsafeRawBufferPointer, to endpoint: SocketEndpoint)
}

/// The datagrams the relay's associations send, held while a carrier read's records are handled and
/// then sent back to back.
///
/// One carrier read brings many datagrams, often each for a new association whose socket has to be
/// made first. Sent as they were decoded, each reaches a destination that went back to sleep since
/// the last one, and every wakeup is paid in the relay's `sendto` (perf: a third of the relay's time
/// in the new-socket-per-request UDP test). Sent together, one wakeup serves several. The relay
/// flushes after each carrier read (`Carrier.onRecordsDelivered`), before the turn's carrier output —
/// at the end of the turn, OPEN_OK went out first and every new association's first datagram waited
/// for that write (one-in-flight latency +30 %). Nothing outlives the turn: whatever is still held
/// then is sent before the loop sleeps, or as soon as it holds `limit` bytes. Loop-confined.
final class DatagramBatch {
    private struct Entry {
        let link: any DatagramSender
        let endpoint: SocketEndpoint
        let start: Int
        let count: Int
    }

    private unowned let loop: EventLoop
    private let limit: Int
    private var bytes: [UInt8] = []
    private var entries: [Entry] = []

    init(loop: EventLoop, limit: Int = 256 * 1024) {
        self.loop = loop
        self.limit = limit
    }

    /// Queues `payload` for `link` to send to `endpoint` at the next `flush()`, at the latest at the
    /// end of this turn.
    func append(_ payload: UnsafeRawBufferPointer, from link: any DatagramSender, to endpoint: SocketEndpoint) {
        if entries.isEmpty { loop.afterTurn { self.flush() } }  // strong: see EventLoop.schedule on weak captures
        entries.append(Entry(link: link, endpoint: endpoint, start: bytes.count, count: payload.count))
        bytes.append(contentsOf: payload)
        if bytes.count >= limit { flush() }
    }

    /// Sends what is queued, in the order it came; links closed meanwhile drop theirs.
    func flush() {
        guard !entries.isEmpty else { return }
        bytes.withUnsafeBytes { all in
            for entry in entries {
                entry.link.send(UnsafeRawBufferPointer(rebasing: all[entry.start..<entry.start + entry.count]), to: entry.endpoint)
            }
        }
        entries.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
    }
}
