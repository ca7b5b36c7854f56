// Allocation-free conversions between IPAddress and packet bytes, for the packet path
// (`IPAddress.init(bytes:)` and `.bytes` go through arrays).

extension IPAddress {
    /// Reads an IPv4 address from the 4 network-order bytes at `offset`.
    public init(v4In buffer: UnsafeRawBufferPointer, at offset: Int) {
        precondition(offset >= 0 && offset <= buffer.count - 4, "IPv4 address past the buffer")
        self = .v4(buffer.readU32(at: offset))
    }

    /// Reads an IPv6 address from the 16 network-order bytes at `offset`.
    public init(v6In buffer: UnsafeRawBufferPointer, at offset: Int) {
        precondition(offset >= 0 && offset <= buffer.count - 16, "IPv6 address past the buffer")
        self = .v6(buffer.readU64(at: offset), buffer.readU64(at: offset + 8))
    }

    /// Address length in bytes: 4 or 16.
    public var byteCount: Int { isIPv4 ? 4 : 16 }

    /// Writes the address's `byteCount` network-order bytes at `offset`.
    public func store(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        precondition(offset >= 0 && offset <= buffer.count - byteCount, "address past the buffer")
        switch self {
        case .v4(let a):
            buffer.storeBytes(of: a.bigEndian, toByteOffset: offset, as: UInt32.self)
        case .v6(let hi, let lo):
            buffer.storeBytes(of: hi.bigEndian, toByteOffset: offset, as: UInt64.self)
            buffer.storeBytes(of: lo.bigEndian, toByteOffset: offset + 8, as: UInt64.self)
        }
    }

    /// The ones'-complement sum of the address's 16-bit words (not folded), for pseudo-headers.
    var wordSum: UInt64 {
        switch self {
        case .v4(let a):
            return UInt64(a >> 16) + UInt64(a & 0xFFFF)
        case .v6(let hi, let lo):
            return (hi >> 48) + (hi >> 32 & 0xFFFF) + (hi >> 16 & 0xFFFF) + (hi & 0xFFFF)
                + (lo >> 48) + (lo >> 32 & 0xFFFF) + (lo >> 16 & 0xFFFF) + (lo & 0xFFFF)
        }
    }
}
