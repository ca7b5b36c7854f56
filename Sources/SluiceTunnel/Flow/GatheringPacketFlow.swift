/// A `PacketFlow` that writes one packet from several pieces in one call (a Linux TUN: `writev`).
///
/// With segmentation offload the engine then writes each TCP super-packet as its joined headers
/// followed by the segments' payloads where lwIP holds them, instead of first copying every payload
/// into a batch slot (`SegmentCoalescer`). Optional: a plain `PacketFlow` is handed super-packets in
/// its batches as before. Thread rule as for `PacketFlow`.
public protocol GatheringPacketFlow: PacketFlow {
    /// Writes one packet toward the applications without blocking: `pieces`, in order, make up the
    /// IP packet (the first holds its IP and TCP headers whole); `offload` as in a batch. Returns
    /// false when the flow did not take it (the engine counts it as dropped). The pieces are valid
    /// during the call only. Packets the engine batched before this one were written before it.
    func writePacket(gathering pieces: UnsafeBufferPointer<UnsafeRawBufferPointer>, offload: PacketOffload) throws(PacketFlowError) -> Bool
}

/// Keeps the bytes of the packet being emitted valid past the emit call, until released: lwIP's
/// segment buffers (`TCPStack.holdCurrentOutput`), so that `SegmentCoalescer` can gather them into a
/// write at the end of the turn. Tests use a counting twin.
protocol OutputPacketHolder: AnyObject {
    /// A token for the bytes of the packet being emitted now, or nil when they cannot be held (not
    /// inside lwIP's output, or a packet lwIP handed over as a copy).
    func holdCurrentOutput() -> UnsafeMutableRawPointer?
    func releaseHeldOutput(_ token: UnsafeMutableRawPointer)
}
