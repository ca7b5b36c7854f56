import CSluiceShims
import Glibc
import SluiceSystem
import SluiceWire

/// Receives a burst of datagrams with one `recvmmsg` call (`sluice_receive_batch`) into slots
/// allocated once: the UDP path's sockets read up to `slots` packets per system call instead of
/// one `recvfrom` each, and stop at a short burst instead of paying one more call for EAGAIN (an
/// edge-triggered socket signals again for every datagram that arrives later).
///
/// Every slot takes the largest UDP payload, so no datagram is ever cut short; only the pages a
/// packet touches become resident. Loop-confined.
public final class DatagramReceiver {
    /// Bytes of one slot: the largest UDP datagram.
    public static let slotSize = 65_536
    public let slots: Int
    private let buffer: UnsafeMutableRawBufferPointer
    private let vector: UnsafeMutablePointer<sluice_datagram>
    private var received = 0

    /// - Parameter slots: datagrams one call takes (at most 64, `SLUICE_BATCH_MAX`).
    public init(slots: Int = 32) {
        self.slots = min(max(1, slots), Int(sluice_batch_max()))
        buffer = .allocate(byteCount: self.slots * Self.slotSize, alignment: 16)
        vector = .allocate(capacity: self.slots)
        vector.initialize(repeating: sluice_datagram(), count: self.slots)
    }

    deinit {
        buffer.deallocate()
        vector.deallocate()
    }

    /// Reads what `socket` holds, up to `slots` datagrams: `.done(n)` with n ≥ 1 (fewer than
    /// `slots`: the queue was empty then), `.wouldBlock` when none was waiting. An error (an ICMP
    /// error of an earlier packet on a connected socket) throws and consumes nothing.
    public func receive(from socket: Socket) throws(SystemError) -> IOResult<Int> {
        for i in 0..<slots {
            vector[i].base = UnsafeMutableRawPointer(buffer.baseAddress! + i * Self.slotSize)
            vector[i].length = Self.slotSize
        }
        let result = try syscallRetrying("recvmmsg") { sluice_receive_batch(socket.fd, vector, UInt32(slots)) }
        guard case .done(let n) = result else {
            received = 0
            return .wouldBlock
        }
        received = Int(n)
        return .done(Int(n))
    }

    /// Datagram `i` of the last `receive`, writable in place (the path opens packets where they are).
    public func packet(_ i: Int) -> UnsafeMutableRawBufferPointer {
        precondition(i < received, "no such datagram")
        return UnsafeMutableRawBufferPointer(start: vector[i].base, count: vector[i].length)
    }

    /// The source of datagram `i`: nil on a socket that gives none (a connected one may) or an
    /// address family other than IPv4 and IPv6.
    public func source(_ i: Int) -> SocketEndpoint? {
        precondition(i < received, "no such datagram")
        guard vector[i].address_length > 0 else { return nil }
        return SocketEndpoint(storage: vector[i].address)
    }

    /// Whether datagram `i` was longer than its slot (cannot happen for UDP; kept as a check).
    public func truncated(_ i: Int) -> Bool { vector[i].flags & sluice_msg_trunc() != 0 }
}
