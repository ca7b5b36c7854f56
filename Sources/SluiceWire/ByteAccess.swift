// Big-endian field access for the views and emitters. Callers check bounds first (once, in
// `init(validating:)`); these helpers only turn network order into values. Loads are unaligned: a
// packet may start at any address.

extension UnsafeRawBufferPointer {
    @inline(__always)
    func readU16(at offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    @inline(__always)
    func readU32(at offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always)
    func readU64(at offset: Int) -> UInt64 {
        UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The bytes in `range` as a buffer of their own (index 0 is `range.lowerBound`).
    @inline(__always)
    func slice(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[range])
    }
}

extension UnsafeMutableRawBufferPointer {
    @inline(__always)
    func writeU16(_ value: UInt16, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt16.self)
    }

    @inline(__always)
    func writeU32(_ value: UInt32, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
    }
}
