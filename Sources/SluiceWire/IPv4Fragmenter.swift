/// Splits an IPv4 packet into fragments that fit an MTU (RFC 791 §2.3, §3.2 "fragmentation").
///
/// The client is the source of the packets it synthesises toward the application and so may
/// fragment them; a UDP reply larger than the TUN's MTU reaches the application only this way. The
/// packet's DF flag is therefore not honoured: the caller decided.
///
/// Fragments keep the identification; the first carries the whole header, options included, later
/// ones only the options whose "copied" flag is set (padded with end-of-list to 4 bytes). Every
/// fragment but the last carries a multiple of 8 data bytes and MF; the last keeps the packet's own
/// MF, so a fragment can be fragmented again (offsets add up). DF is cleared, header checksums are
/// computed. Nothing is allocated: each fragment is written into the caller's scratch buffer and
/// handed to a callback before the next one is written.
public enum IPv4Fragmenter {
    /// Calls `body` with each fragment of `packet` in order and returns how many there were.
    ///
    /// A packet of at most `mtu` bytes is handed over as it is (cut to its total length), without
    /// a copy. Otherwise each fragment is written into `scratch` and is valid only during its call.
    ///
    /// Throws what `IPv4Packet(validating:)` throws, and `.mtuTooSmall(mtu)` if `mtu` leaves fewer
    /// than 8 data bytes after a fragment's header (68 always suffices: RFC 791's minimum). Traps if
    /// `scratch` is shorter than `mtu` when fragmenting.
    @discardableResult
    public static func fragment(
        _ packet: UnsafeRawBufferPointer, mtu: Int, scratch: UnsafeMutableRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) -> Void
    ) throws(WireError) -> Int {
        let ip = try IPv4Packet(validating: packet)
        let bytes = ip.bytes
        if bytes.count <= mtu {
            body(bytes)
            return 1
        }
        let firstHeaderLength = ip.headerLength
        let laterHeaderLength = IPv4Packet.minimumHeaderLength + roundUp4(copiedOptionsLength(ip))
        let firstChunk = (mtu - firstHeaderLength) & ~7
        let laterChunk = (mtu - laterHeaderLength) & ~7
        guard firstChunk >= 8, laterChunk >= 8 else { throw .mtuTooSmall(mtu) }
        precondition(scratch.count >= mtu, "scratch buffer smaller than the MTU")

        let data = ip.payload
        let baseOffset = ip.fragmentOffset
        let lastMF = ip.moreFragments
        // First fragment: the whole header.
        scratch.copyMemory(from: bytes.slice(0..<firstHeaderLength))
        var sent = emit(data, 0..<firstChunk, headerLength: firstHeaderLength, baseOffset: baseOffset, more: true, scratch, body)
        // Later fragments: the fixed header, then the copied options, written once.
        scratch[0] = 0x40 | UInt8(laterHeaderLength / 4)
        writeCopiedOptions(ip, into: scratch, end: laterHeaderLength)
        var count = 1
        while sent < data.count {
            let end = min(sent + laterChunk, data.count)
            let more = end < data.count || lastMF
            sent = emit(data, sent..<end, headerLength: laterHeaderLength, baseOffset: baseOffset, more: more, scratch, body)
            count += 1
        }
        return count
    }

    /// Writes the data bytes `range` after a header of `headerLength` bytes already in `scratch`,
    /// fixes the header's length, flags, offset and checksum, and hands the fragment over. Returns
    /// `range.upperBound`.
    private static func emit(
        _ data: UnsafeRawBufferPointer, _ range: Range<Int>, headerLength: Int, baseOffset: Int, more: Bool,
        _ scratch: UnsafeMutableRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void
    ) -> Int {
        let total = headerLength + range.count
        UnsafeMutableRawBufferPointer(rebasing: scratch[headerLength..<total]).copyMemory(from: data.slice(range))
        scratch.writeU16(UInt16(total), at: 2)
        scratch.writeU16(UInt16((baseOffset + range.lowerBound) / 8) | (more ? 0x2000 : 0), at: 6)
        scratch.writeU16(0, at: 10)
        scratch.writeU16(Checksum.checksum(UnsafeRawBufferPointer(rebasing: scratch[0..<headerLength])), at: 10)
        body(UnsafeRawBufferPointer(rebasing: scratch[0..<total]))
        return range.upperBound
    }

    /// Calls `body(start, length)` for each option whose copied flag (the type's top bit) is set.
    /// The walk stops at end-of-list or at the first malformed option.
    private static func forEachCopiedOption(_ ip: IPv4Packet, _ body: (Int, Int) -> Void) {
        let bytes = ip.bytes
        var i = IPv4Packet.minimumHeaderLength
        let end = ip.headerLength
        while i < end {
            let type = bytes[i]
            if type == 0 { return }  // end of list
            if type == 1 {  // no-operation: not copied
                i += 1
                continue
            }
            guard i + 1 < end else { return }
            let length = Int(bytes[i + 1])
            guard length >= 2, i + length <= end else { return }
            if type & 0x80 != 0 { body(i, length) }
            i += length
        }
    }

    private static func copiedOptionsLength(_ ip: IPv4Packet) -> Int {
        var total = 0
        forEachCopiedOption(ip) { _, length in total += length }
        return total
    }

    private static func writeCopiedOptions(_ ip: IPv4Packet, into scratch: UnsafeMutableRawBufferPointer, end: Int) {
        var at = IPv4Packet.minimumHeaderLength
        forEachCopiedOption(ip) { start, length in
            UnsafeMutableRawBufferPointer(rebasing: scratch[at..<at + length]).copyMemory(from: ip.bytes.slice(start..<start + length))
            at += length
        }
        while at < end {  // end-of-list padding
            scratch[at] = 0
            at += 1
        }
    }

    private static func roundUp4(_ n: Int) -> Int { (n + 3) & ~3 }
}
