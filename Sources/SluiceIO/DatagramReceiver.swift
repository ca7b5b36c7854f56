import CSluiceShims
import Glibc
import SluiceSystem
import SluiceWire

/// Receives a burst of datagrams with one `recvmmsg` call (`sluice_receive_prepared`) into slots
/// and message headers allocated once: the UDP path's sockets read up to `slots` packets per system
/// call instead of one `recvfrom` each, and stop at a short burst instead of paying one more call for
/// EAGAIN (an edge-triggered socket signals again for every datagram that arrives later).
///
/// Every slot takes the largest UDP payload, so no datagram is ever cut short; only the pages a
/// packet touches become resident. Loop-confined.
///
/// On a socket with UDP GRO turned on (`enableCoalescing(on:)`, the UDP path's), the kernel may
/// put several datagrams of one source into one slot (a GSO send that arrived whole, or packets
/// it coalesced), with their size in a control message: the receiver splits them again, so
/// `packet(_:)` and `source(_:)` count datagrams, not slots, and one skb crossed the receiving
/// stack for all of them.
public final class DatagramReceiver {
    /// Bytes of one slot: the largest UDP datagram.
    public static let slotSize = 65_536
    public let slots: Int
    private let buffer: UnsafeMutableRawBufferPointer
    private let vector: UnsafeMutablePointer<sluice_datagram>
    private let headers: OpaquePointer
    private var received = 0
    /// Where datagram `i` of the last receive is when a slot held several: slot, offset, length.
    private var pieces: [(slot: Int, offset: Int, length: Int)] = []
    /// Whether the last receive filled fewer slots than it had: the socket's queue was empty then.
    public private(set) var drained = true

    /// - Parameter slots: datagrams one call takes (at most 64, `SLUICE_BATCH_MAX`).
    public init(slots: Int = 32) {
        self.slots = min(max(1, slots), Int(sluice_batch_max()))
        buffer = .allocate(byteCount: self.slots * Self.slotSize, alignment: 16)
        vector = .allocate(capacity: self.slots)
        vector.initialize(repeating: sluice_datagram(), count: self.slots)
        for i in 0..<self.slots {
            vector[i].base = UnsafeMutableRawPointer(buffer.baseAddress! + i * Self.slotSize)
            vector[i].length = Self.slotSize
        }
        guard let headers = sluice_receive_headers_create(vector, UInt32(self.slots)) else {
            fatalError("out of memory for \(self.slots) message headers")
        }
        self.headers = headers
        pieces.reserveCapacity(self.slots * Int(sluice_udp_max_segments()))
    }

    deinit {
        sluice_receive_headers_free(headers)
        buffer.deallocate()
        vector.deallocate()
    }

    /// Turns on UDP GRO for `socket` (Linux 5.0+): false when the kernel does not have it, and the
    /// socket receives one datagram a slot as before.
    @discardableResult
    public static func enableCoalescing(on socket: Socket) -> Bool { sluice_udp_enable_gro(socket.fd) == 0 }

    /// Reads what `socket` holds, up to `slots` slots: `.done(n)` with n ≥ 1 datagrams (`drained`:
    /// the queue was empty then), `.wouldBlock` when none was waiting. An error (an ICMP error of an
    /// earlier packet on a connected socket) throws and consumes nothing.
    public func receive(from socket: Socket) throws(SystemError) -> IOResult<Int> {
        let result = try syscallRetrying("recvmmsg") { sluice_receive_prepared(socket.fd, headers) }
        pieces.removeAll(keepingCapacity: true)
        guard case .done(let n) = result else {
            received = 0
            drained = true
            return .wouldBlock
        }
        let slotsFilled = Int(n)
        drained = slotsFilled < slots
        received = slotsFilled
        if (0..<slotsFilled).contains(where: { vector[$0].segment != 0 && Int(vector[$0].segment) < vector[$0].length }) {
            for slot in 0..<slotsFilled {
                let length = vector[slot].length
                let size = vector[slot].segment == 0 ? max(length, 1) : Int(vector[slot].segment)
                var offset = 0
                repeat {
                    pieces.append((slot, offset, min(size, length - offset)))
                    offset += size
                } while offset < length
            }
            received = pieces.count
        }
        return .done(received)
    }

    /// The slot datagram `i` is in, and where in it.
    private func piece(_ i: Int) -> (slot: Int, offset: Int, length: Int) {
        precondition(i < received, "no such datagram")
        return pieces.isEmpty ? (i, 0, vector[i].length) : pieces[i]
    }

    /// Datagram `i` of the last `receive`, writable in place (the path opens packets where they are).
    public func packet(_ i: Int) -> UnsafeMutableRawBufferPointer {
        let (slot, offset, length) = piece(i)
        return UnsafeMutableRawBufferPointer(start: vector[slot].base! + offset, count: length)
    }

    /// The source of datagram `i`: nil on a socket that gives none (a connected one may) or an
    /// address family other than IPv4 and IPv6.
    public func source(_ i: Int) -> SocketEndpoint? {
        let slot = piece(i).slot
        guard vector[slot].address_length > 0 else { return nil }
        return SocketEndpoint(storage: vector[slot].address)
    }

    /// Whether datagram `i` was longer than its slot (cannot happen for UDP; kept as a check).
    public func truncated(_ i: Int) -> Bool { vector[piece(i).slot].flags & sluice_msg_trunc() != 0 }
}
