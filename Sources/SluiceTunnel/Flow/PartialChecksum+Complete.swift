import CSluiceShims

extension PacketOffload.PartialChecksum {
    /// Completes the checksum in `packet` in place: the ones'-complement sum from `start` to the end
    /// is added to the pseudo-header sum the field holds, complemented into the field. Returns false
    /// for offsets outside the packet. The engine does this for every packet a flow hands in with a
    /// partial checksum; a flow's other end does the same for super-packets the engine writes.
    public func complete(in packet: UnsafeMutableRawBufferPointer) -> Bool {
        let field = start + fieldOffset
        guard start >= 0, start < packet.count, field + 2 <= packet.count else { return false }
        // The C routine that also serves lwIP (CSluiceShims/checksum.c): this pass covers every byte
        // the applications upload, so it is worth the fastest loop.
        let native = sluice_checksum_native(packet.baseAddress! + start, Int32(packet.count - start))
        packet.storeBytes(of: ~native, toByteOffset: field, as: UInt16.self)
        return true
    }
}
