import CSluiceShims
import Glibc
import SluiceLoop
import SluiceWire

/// What sends a run of a `DatagramBatch`'s datagrams: its socket, and what becomes of those the
/// kernel refuses. Loop-confined like the batch.
public protocol DatagramBatchSender: AnyObject {
    /// The socket the datagrams go out on; nil when it closed since they were queued (they are dropped).
    var batchSocket: Socket? { get }
    /// Whether the socket is a dual-stack IPv6 one: IPv4 destinations go as IPv4-mapped addresses.
    var batchDualStack: Bool { get }
    /// The kernel refused one datagram with `code` (EMSGSIZE, an ICMP error surfacing, EPERM …),
    /// never EAGAIN; the rest of the run is still sent. `packet` may be changed in place.
    func batch(refused packet: UnsafeMutableRawBufferPointer, to endpoint: SocketEndpoint?, code: Int32)
    /// The socket's send buffer was full (EAGAIN): the `count` datagrams of this run from there on
    /// were dropped, as UDP drops what a full queue cannot take.
    func batch(droppedForFullSocket count: Int)
}

/// Datagrams held in one buffer until the end of the loop turn (or an earlier `flush()`), then sent
/// back to back: every consecutive run of one sender's datagrams with one `sendmmsg` call
/// (`sluice_send_batch`), up to 64 a call.
///
/// One loop turn often makes many datagrams for one socket: a carrier read brings a burst for one
/// association, a TUN read a burst for the UDP path. Sent one `sendto` each, every datagram pays a
/// system call (and on the relay, a destination woken for each one: perf found a third of the
/// relay's time there in the new-socket-per-request UDP test); sent together, one call and one
/// wake-up serve the run. Nothing outlives the turn: whatever is held at its end is sent before the
/// loop sleeps, or as soon as the bytes held reach `limit`.
///
/// Datagrams are written in place (`append(to:from:reserving:_:)`), so the UDP path seals a packet
/// where it will be sent from; the buffer, the entry list and the `sendmmsg` vector are allocated
/// once. Loop-confined.
public final class DatagramBatch {
    private struct Entry {
        let sender: any DatagramBatchSender
        let endpoint: SocketEndpoint?
        let start: Int
        let count: Int
    }

    private unowned let loop: EventLoop
    /// Bytes held before the batch sends without waiting for the end of the turn.
    public let limit: Int
    private let buffer: UnsafeMutableRawBufferPointer
    private var used = 0
    private var entries: [Entry] = []
    private let vector: UnsafeMutablePointer<sluice_datagram>
    private static let vectorCount = Int(sluice_batch_max())

    /// - Parameter limit: bytes held at most; the largest datagram appended must fit.
    public init(loop: EventLoop, limit: Int = 256 * 1024) {
        self.loop = loop
        self.limit = limit
        buffer = .allocate(byteCount: limit, alignment: 16)
        vector = .allocate(capacity: Self.vectorCount)
        vector.initialize(repeating: sluice_datagram(), count: Self.vectorCount)
        entries.reserveCapacity(Self.vectorCount)
    }

    deinit {
        buffer.deallocate()
        vector.deallocate()
    }

    /// Datagrams held now.
    public var count: Int { entries.count }

    /// Queues a copy of `payload` for `sender` to send to `endpoint` (nil: its connected peer).
    public func append(_ payload: UnsafeRawBufferPointer, to endpoint: SocketEndpoint?, from sender: any DatagramBatchSender) {
        append(to: endpoint, from: sender, reserving: payload.count) { room in
            room.copyMemory(from: payload)
            return payload.count
        }
    }

    /// Queues one datagram written in place: `write` gets at least `reserving` bytes and returns how
    /// many it wrote, or nil to queue nothing.
    public func append(to endpoint: SocketEndpoint?, from sender: any DatagramBatchSender, reserving: Int,
                       _ write: (UnsafeMutableRawBufferPointer) -> Int?) {
        precondition(reserving <= limit, "a datagram larger than the batch")
        if used + reserving > limit { flush() }
        guard let n = write(UnsafeMutableRawBufferPointer(rebasing: buffer[used..<used + reserving])) else { return }
        precondition(n <= reserving, "wrote past the room it reserved")
        if entries.isEmpty { loop.afterTurn { self.flush() } }  // strong: see EventLoop.schedule on weak captures
        entries.append(Entry(sender: sender, endpoint: endpoint, start: used, count: n))
        used += n
    }

    /// Sends what is queued, in the order it came; senders whose socket closed meanwhile drop theirs.
    public func flush() {
        var first = 0
        while first < entries.count {
            let sender = entries[first].sender
            var end = first + 1
            while end < entries.count && entries[end].sender === sender && end - first < Self.vectorCount { end += 1 }
            send(entries[first..<end], by: sender)
            first = end
        }
        entries.removeAll(keepingCapacity: true)
        used = 0
    }

    /// One sender's run: `sendmmsg` until all went, skipping each refused datagram and dropping the
    /// rest when the socket is full.
    private func send(_ run: ArraySlice<Entry>, by sender: any DatagramBatchSender) {
        guard let socket = sender.batchSocket else { return }
        let dualStack = sender.batchDualStack
        for (i, entry) in run.enumerated() {
            vector[i].base = UnsafeMutableRawPointer(buffer.baseAddress! + entry.start)
            vector[i].length = entry.count
            if let endpoint = entry.endpoint {
                (dualStack ? endpoint.ipv4Mapped : endpoint).withSockaddr { address, length in
                    withUnsafeMutableBytes(of: &vector[i].address) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length))) }
                    vector[i].address_length = length
                }
            } else {
                vector[i].address_length = 0
            }
        }
        var done = 0
        while done < run.count {
            let n = sluice_send_batch(socket.fd, vector + done, UInt32(run.count - done))
            if n > 0 {
                done += Int(n)
                continue
            }
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK {
                sender.batch(droppedForFullSocket: run.count - done)
                return
            }
            let entry = run[run.startIndex + done]
            sender.batch(refused: UnsafeMutableRawBufferPointer(rebasing: buffer[entry.start..<entry.start + entry.count]),
                         to: entry.endpoint, code: code)
            done += 1
        }
    }
}
