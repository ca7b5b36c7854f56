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
    /// Whether runs of equal-sized datagrams to one destination go out as one UDP GSO send
    /// (`UDP_SEGMENT`). The batch turns it off when the socket's route cannot segment (EIO: an
    /// IPsec route, a device without checksum offload). Off unless the sender keeps it.
    var batchSegmentation: Bool { get set }
}

extension DatagramBatchSender {
    public var batchSegmentation: Bool {
        get { false }
        set {}  // nothing to turn off
    }
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
///
/// A sender with `batchSegmentation` has each stretch of its run that goes to one destination in
/// datagrams of one size (the last may be shorter) sent as one message with a `UDP_SEGMENT`
/// control message (UDP GSO, udp(7)): the bytes are already contiguous in the buffer, and the
/// kernel takes one skb through UDP, IP, netfilter and the device instead of one per datagram,
/// cutting it up only at the end (on a real NIC, in the device). `sendmmsg` and `recvmmsg` halve
/// the system calls but not this per-packet work, which perf found to be most of the UDP path's
/// cost (notes of issue 14). A message the kernel refuses is sent again datagram by datagram, so
/// the one it really refuses is found and reported like any other.
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
    private let firsts: UnsafeMutablePointer<Int>
    private static let vectorCount = Int(sluice_batch_max())

    /// - Parameter limit: bytes held at most; the largest datagram appended must fit.
    public init(loop: EventLoop, limit: Int = 256 * 1024) {
        self.loop = loop
        self.limit = limit
        buffer = .allocate(byteCount: limit, alignment: 16)
        vector = .allocate(capacity: 2 * Self.vectorCount)  // the second half: a refused GSO group sent again
        vector.initialize(repeating: sluice_datagram(), count: 2 * Self.vectorCount)
        firsts = .allocate(capacity: 2 * (Self.vectorCount + 1))
        entries.reserveCapacity(Self.vectorCount)
    }

    deinit {
        buffer.deallocate()
        vector.deallocate()
        firsts.deallocate()
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
        if entries.isEmpty { loop.afterTurn(self) }  // flushes at the end of the turn (`runTurnAction`)
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
            send(entries[first..<end], by: sender, segmenting: sender.batchSegmentation)
            first = end
        }
        entries.removeAll(keepingCapacity: true)
        used = 0
    }

    /// Datagrams one GSO message takes at most: the kernel's segment limit, and bytes that fit one
    /// IP packet's 16-bit length with headers to spare.
    private static let maxSegments = Int(sluice_udp_max_segments())
    private static let maxSegmentedBytes = 65_000

    /// One sender's run: its messages (a datagram, or with `batchSegmentation` a group of them
    /// sent as one) with `sendmmsg` until all went. A refused group is sent again one datagram a
    /// message, in the second half of `vector` and `firsts`; a refused datagram is reported and
    /// skipped; a full socket drops the rest.
    private func send(_ run: ArraySlice<Entry>, by sender: any DatagramBatchSender, segmenting: Bool, half: Int = 0) {
        guard let socket = sender.batchSocket else { return }
        let dualStack = sender.batchDualStack
        let vector = self.vector + half * Self.vectorCount
        let firsts = self.firsts + half * (Self.vectorCount + 1)  // message k holds entries firsts[k]..<firsts[k + 1]
        var messages = 0
        var first = run.startIndex
        while first < run.endIndex {
            let end = segmenting ? groupEnd(run, from: first) : first + 1
            let k = messages
            let bytes = run[end - 1].start + run[end - 1].count - run[first].start
            vector[k].base = UnsafeMutableRawPointer(buffer.baseAddress! + run[first].start)
            vector[k].length = bytes
            vector[k].segment = end - first > 1 ? UInt16(run[first].count) : 0
            if let endpoint = run[first].endpoint {
                (dualStack ? endpoint.ipv4Mapped : endpoint).withSockaddr { address, length in
                    withUnsafeMutableBytes(of: &vector[k].address) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length))) }
                    vector[k].address_length = length
                }
            } else {
                vector[k].address_length = 0
            }
            firsts[k] = first
            messages += 1
            first = end
        }
        firsts[messages] = run.endIndex
        var done = 0
        while done < messages {
            let n = sluice_send_batch(socket.fd, vector + done, UInt32(messages - done))
            if n > 0 {
                done += Int(n)
                continue
            }
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK {
                sender.batch(droppedForFullSocket: run.endIndex - firsts[done])
                return
            }
            let group = firsts[done]..<firsts[done + 1]
            if group.count > 1 {
                if code == EIO { sender.batchSegmentation = false }
                send(run[group], by: sender, segmenting: false, half: 1)
            } else {
                let entry = run[group.lowerBound]
                sender.batch(refused: UnsafeMutableRawBufferPointer(rebasing: buffer[entry.start..<entry.start + entry.count]),
                             to: entry.endpoint, code: code)
            }
            done += 1
        }
    }

    /// Where the GSO group starting at `first` ends: the datagrams after it that go to the same
    /// destination, follow it in the buffer and are as long as it (one shorter one may end it).
    /// Empty datagrams stay alone: a segmented send cannot carry one.
    private func groupEnd(_ run: ArraySlice<Entry>, from first: Int) -> Int {
        let size = run[first].count
        var bytes = size
        var end = first + 1
        while size > 0 && end < run.endIndex && end - first < Self.maxSegments {
            let next = run[end]
            guard next.count > 0, next.count <= size, next.endpoint == run[first].endpoint,
                  next.start == run[end - 1].start + run[end - 1].count,
                  bytes + next.count <= Self.maxSegmentedBytes else { break }
            bytes += next.count
            end += 1
            if next.count < size { break }
        }
        return end
    }
}

extension DatagramBatch: TurnAction {
    /// The end of the turn in which the first datagram was queued: sends them all.
    public func runTurnAction() { flush() }
}
