// Big-endian field access for the views and emitters, and (package-wide) for the frame codec in
// SluiceMux. Callers check bounds first (once, in `init(validating:)`); these helpers only turn
// network order into values. Loads are unaligned: a packet or frame may start at any address.

extension UnsafeRawBufferPointer {
    @inlinable @inline(__always)
    package func readU16(at offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    @inlinable @inline(__always)
    package func readU32(at offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inlinable @inline(__always)
    package func readU64(at offset: Int) -> UInt64 {
        UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The bytes in `range` as a buffer of their own (index 0 is `range.lowerBound`).
    @inlinable @inline(__always)
    package func slice(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[range])
    }
}

extension UnsafeMutableRawBufferPointer {
    @inlinable @inline(__always)
    package func writeU16(_ value: UInt16, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt16.self)
    }

    @inlinable @inline(__always)
    package func writeU32(_ value: UInt32, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
    }

    @inlinable @inline(__always)
    package func writeU64(_ value: UInt64, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt64.self)
    }
}
