import CLwIP

/// Memory for one IP packet that lwIP can take as its own, so that a packet read into it reaches the
/// stack without a copy (`TCPStack.input(_:summary:checksum:)` taking a buffer).
///
/// Why: with `pbuf_alloc` every byte a client uploads is copied once more between the TUN read and
/// lwIP — 2.5 % of the client's samples in a one-stream upload (`reqcpu.py --test iperf-up --perf`).
/// The buffer carries a custom pbuf (lwIP's documented `pbuf_alloced_custom`, meant for drivers
/// that receive into their own memory) in a header in front of its bytes (CLwIP's
/// `sluice_packet_buffer_*`); adopted, it is freed by lwIP's `pbuf_free`, wherever lwIP or a flow
/// kept the segment.
///
/// Owned by one value at a time (noncopyable); freed when that value ends without being adopted.
public struct PacketBuffer: ~Copyable {
    /// The whole buffer.
    public let storage: UnsafeMutableRawBufferPointer
    /// Where the packet lies in `storage` (after a flow's own header, say).
    public let packetRange: Range<Int>

    /// Takes ownership of `storage`, which `PacketBuffer.allocate` made.
    package init(owning storage: UnsafeMutableRawBufferPointer, packetRange: Range<Int>) {
        precondition(packetRange.lowerBound >= 0 && packetRange.upperBound <= storage.count && packetRange.count <= 0xFFFF)
        self.storage = storage
        self.packetRange = packetRange
    }

    deinit { Self.deallocate(storage) }

    /// The packet's bytes.
    public var packet: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: storage[packetRange]) }

    /// Hands the buffer to lwIP as a pbuf over the packet's bytes; the pbuf owns it from here on.
    consuming func adopt() -> UnsafeMutablePointer<pbuf> {
        let p = sluice_packet_buffer_adopt(storage.baseAddress, packetRange.lowerBound, UInt16(packetRange.count))
        // Fails only for a length over the memory given, which the init's precondition rules out.
        precondition(p != nil, "pbuf_alloced_custom refused a packet buffer")
        discard self
        return p!
    }

    /// Storage of `capacity` bytes, 64-byte aligned, for `init(owning:packetRange:)`.
    package static func allocate(capacity: Int) -> UnsafeMutableRawBufferPointer {
        guard let base = sluice_packet_buffer_alloc(capacity) else {
            fatalError("out of memory: a packet buffer of \(capacity) bytes")
        }
        return UnsafeMutableRawBufferPointer(start: base, count: capacity)
    }

    /// Frees storage that `allocate` made and nothing adopted.
    package static func deallocate(_ storage: UnsafeMutableRawBufferPointer) {
        sluice_packet_buffer_free(storage.baseAddress)
    }

    /// Gives back the part of `storage` past its first `count` bytes (glibc shrinks in place), so
    /// that a small packet adopted from a large buffer does not keep all of it. May move the bytes.
    package static func shrink(_ storage: UnsafeMutableRawBufferPointer, to count: Int) -> UnsafeMutableRawBufferPointer {
        guard let base = sluice_packet_buffer_shrink(storage.baseAddress, count) else { return storage }
        return UnsafeMutableRawBufferPointer(start: base, count: count)
    }
}
