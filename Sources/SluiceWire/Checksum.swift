/// The Internet checksum (RFC 1071) and the pieces TCP, UDP and IPv4 build from it.
///
/// Values called *sums* are folded 16-bit ones'-complement sums, not complemented, expressed as the
/// big-endian 16-bit word they stand for; a *checksum* is the complement of a sum, the value written
/// into a header. A buffer that includes its own correct checksum sums to `0xFFFF`.
///
/// The byte loop reads native-order 64-bit words and carries with `addingReportingOverflow`; the
/// ones'-complement sum is independent of byte order (RFC 1071 §2(B)), so one byte swap at the end
/// turns the native-order result into the network-order one.
public enum Checksum {
    /// The folded ones'-complement sum of `bytes` as big-endian 16-bit words; an odd final byte is
    /// padded with a zero byte. Any length, any alignment.
    public static func sum(_ bytes: UnsafeRawBufferPointer) -> UInt16 {
        guard let base = bytes.baseAddress else { return 0 }
        let count = bytes.count
        var acc: UInt64 = 0
        var carries: UInt64 = 0
        var i = 0
        // 32 bytes a turn. `carries` counts wrap-arounds; it cannot itself overflow for any buffer
        // that fits in memory (one carry per 8 bytes at most).
        while count &- i >= 32 {
            let w0 = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: i &+ 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: i &+ 16, as: UInt64.self)
            let w3 = base.loadUnaligned(fromByteOffset: i &+ 24, as: UInt64.self)
            var o: Bool
            (acc, o) = acc.addingReportingOverflow(w0)
            carries &+= o ? 1 : 0
            (acc, o) = acc.addingReportingOverflow(w1)
            carries &+= o ? 1 : 0
            (acc, o) = acc.addingReportingOverflow(w2)
            carries &+= o ? 1 : 0
            (acc, o) = acc.addingReportingOverflow(w3)
            carries &+= o ? 1 : 0
            i &+= 32
        }
        while count &- i >= 8 {
            let (s, o) = acc.addingReportingOverflow(base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            acc = s
            carries &+= o ? 1 : 0
            i &+= 8
        }
        // The tail: at most 7 bytes, each piece still at an even offset from the start, so each
        // lands in the right half of its 16-bit word.
        var tail: UInt64 = 0
        if count &- i >= 4 {
            tail &+= UInt64(base.loadUnaligned(fromByteOffset: i, as: UInt32.self))
            i &+= 4
        }
        if count &- i >= 2 {
            tail &+= UInt64(base.loadUnaligned(fromByteOffset: i, as: UInt16.self))
            i &+= 2
        }
        if count &- i == 1 {
            // The padded final byte is the first (high) byte of a big-endian word; in native order
            // on a little-endian machine that is the low byte.
            let b = UInt64(base.load(fromByteOffset: i, as: UInt8.self))
            tail &+= 1.littleEndian == 1 ? b : b << 8
        }
        var o: Bool
        (acc, o) = acc.addingReportingOverflow(tail)
        carries &+= o ? 1 : 0
        (acc, o) = acc.addingReportingOverflow(carries)
        acc &+= o ? 1 : 0  // cannot overflow again: acc is now below `carries`
        let native = fold(acc)
        return UInt16(bigEndian: native)
    }

    /// Folds a wide sum of 16-bit words to 16 bits with end-around carry.
    public static func fold(_ wide: UInt64) -> UInt16 {
        var s = (wide >> 32) + (wide & 0xFFFF_FFFF)  // at most 33 bits
        s = (s >> 16) + (s & 0xFFFF)  // at most 18 bits
        s = (s >> 16) + (s & 0xFFFF)  // at most 17 bits, and then 0x1_0000 only if it was 0xFFFF+1
        s = (s >> 16) + (s & 0xFFFF)
        return UInt16(truncatingIfNeeded: s)
    }

    /// Ones'-complement addition of two sums.
    public static func add(_ a: UInt16, _ b: UInt16) -> UInt16 {
        let (s, o) = a.addingReportingOverflow(b)
        return o ? s &+ 1 : s
    }

    /// The checksum field value for a sum: its ones' complement.
    public static func complement(_ sum: UInt16) -> UInt16 { ~sum }

    /// The sum of the TCP/UDP pseudo-header: source and destination address, protocol and the
    /// upper-layer length (RFC 793 §3.1 for IPv4, RFC 8200 §8.1 for IPv6). Both addresses must be
    /// of the same family.
    public static func pseudoHeaderSum(
        source: IPAddress, destination: IPAddress, protocol proto: IPProtocol, length: Int
    ) -> UInt16 {
        let len = UInt64(UInt32(truncatingIfNeeded: length))
        return fold(source.wordSum + destination.wordSum + UInt64(proto.rawValue) + (len >> 16) + (len & 0xFFFF))
    }

    /// The checksum over `bytes` (whose checksum field must be zero) plus a pseudo-header sum.
    public static func checksum(_ bytes: UnsafeRawBufferPointer, pseudoHeaderSum: UInt16 = 0) -> UInt16 {
        complement(add(sum(bytes), pseudoHeaderSum))
    }

    /// Whether `bytes`, checksum field included, plus a pseudo-header sum verifies.
    public static func verify(_ bytes: UnsafeRawBufferPointer, pseudoHeaderSum: UInt16 = 0) -> Bool {
        add(sum(bytes), pseudoHeaderSum) == 0xFFFF
    }

    /// Incremental update (RFC 1624 eqn. 3): the new checksum after one 16-bit word of the covered
    /// data changed from `old` to `new`.
    public static func update(_ checksum: UInt16, old: UInt16, new: UInt16) -> UInt16 {
        ~add(add(~checksum, ~old), new)
    }

    /// Incremental update for a changed 32-bit field (an IPv4 address, a TCP sequence number).
    public static func update(_ checksum: UInt16, old: UInt32, new: UInt32) -> UInt16 {
        let c = update(checksum, old: UInt16(old >> 16), new: UInt16(new >> 16))
        return update(c, old: UInt16(truncatingIfNeeded: old), new: UInt16(truncatingIfNeeded: new))
    }

    /// Incremental update for a changed address in a pseudo-header or IPv4 header (same family).
    public static func update(_ checksum: UInt16, old: IPAddress, new: IPAddress) -> UInt16 {
        // ~old + new over all words at once: the sum of complemented words is 0xFFFF*n - sum.
        let n: UInt64 = old.isIPv4 ? 2 : 8
        let notOld = 0xFFFF * n - old.wordSum
        return ~fold(UInt64(~checksum) + notOld + new.wordSum)
    }
}
