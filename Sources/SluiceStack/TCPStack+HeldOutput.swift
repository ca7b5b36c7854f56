import CLwIP

/// Keeping an output packet's bytes past the output call, so that whoever takes `output` can write
/// them later in the turn straight from lwIP's buffer instead of copying them (`SegmentCoalescer`
/// gathers a run of segments into one write).
///
/// lwIP allows this in its public API: a driver that defers transmission takes a reference with
/// `pbuf_ref` and drops it with `pbuf_free` once sent. While the reference is held lwIP treats the
/// segment as busy and neither retransmits nor rewrites it (tcp_out.c, `tcp_output_segment_busy`); it
/// retransmits once the reference is gone, so the holder releases every packet by the end of the
/// loop turn it was emitted in, and before `runTimers` when a timer is due
/// (`StackCounters.timersRunWithHeldOutput` counts the times it did not).
extension TCPStack {
    /// Takes a reference to the packet lwIP is handing to `output` right now, when lwIP holds it in
    /// one buffer (the bytes `output` was given): a token for `releaseHeldOutput`. Nil outside an
    /// output call, for a packet in a chain of buffers (handed to `output` as a copy), and for
    /// packets the stack made itself (resets).
    public func holdCurrentOutput() -> UnsafeMutableRawPointer? {
        guard let p = outputBuffer else { return nil }
        pbuf_ref(p)
        heldOutputCount += 1
        return UnsafeMutableRawPointer(p)
    }

    /// Drops a reference `holdCurrentOutput` took: lwIP may free, reuse or retransmit the segment.
    public func releaseHeldOutput(_ token: UnsafeMutableRawPointer) {
        heldOutputCount -= 1
        pbuf_free(token.assumingMemoryBound(to: pbuf.self))
    }
}
