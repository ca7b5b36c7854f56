import CSluiceShims

/// The 10-byte `struct virtio_net_hdr` in front of every packet on a TUN opened with IFF_VNET_HDR
/// (linux/virtio_net.h), in host byte order. With TUNSETOFFLOAD(CSUM|TSO4|TSO6) the kernel hands us
/// TCP "super-packets" of up to 64 KiB with a partial checksum, and takes the same from us.
struct VirtioNetHeader {
    static let length = 10
    /// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the L4 checksum field holds only the pseudo-header sum; the
    /// sum from `csumStart` to the end must be added.
    static let needsChecksum: UInt8 = 1
    static let gsoNone: UInt8 = 0
    static let gsoTCPv4: UInt8 = 1
    static let gsoTCPv6: UInt8 = 4

    var flags: UInt8 = 0
    var gsoType: UInt8 = gsoNone
    var headerLength: UInt16 = 0
    var gsoSize: UInt16 = 0
    var checksumStart: UInt16 = 0
    var checksumOffset: UInt16 = 0

    init() {}

    init(_ bytes: UnsafeRawBufferPointer) {
        flags = bytes[0]
        gsoType = bytes[1]
        headerLength = bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self)
        gsoSize = bytes.loadUnaligned(fromByteOffset: 4, as: UInt16.self)
        checksumStart = bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)
        checksumOffset = bytes.loadUnaligned(fromByteOffset: 8, as: UInt16.self)
    }

    func write(into bytes: UnsafeMutableRawBufferPointer) {
        bytes[0] = flags
        bytes[1] = gsoType
        bytes.storeBytes(of: headerLength, toByteOffset: 2, as: UInt16.self)
        bytes.storeBytes(of: gsoSize, toByteOffset: 4, as: UInt16.self)
        bytes.storeBytes(of: checksumStart, toByteOffset: 6, as: UInt16.self)
        bytes.storeBytes(of: checksumOffset, toByteOffset: 8, as: UInt16.self)
    }

    /// Completes a partial checksum in place: sum from `checksumStart` to the end (the field holds the
    /// pseudo-header sum), complemented into the field. Returns false for offsets outside the packet.
    func completeChecksum(in packet: UnsafeMutableRawBufferPointer) -> Bool {
        guard flags & Self.needsChecksum != 0 else { return true }
        let start = Int(checksumStart), field = start + Int(checksumOffset)
        guard start < packet.count, field + 2 <= packet.count else { return false }
        // The C routine that also serves lwIP (see CSluiceShims/checksum.c): this pass covers every
        // byte the application uploads, so it is worth the fastest loop.
        let native = sluice_checksum_native(packet.baseAddress! + start, Int32(packet.count - start))
        packet.storeBytes(of: ~native, toByteOffset: field, as: UInt16.self)
        return true
    }
}
