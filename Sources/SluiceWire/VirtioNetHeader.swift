/// The 10-byte `struct virtio_net_hdr` in front of every packet on a TUN opened with IFF_VNET_HDR
/// (linux/virtio_net.h), in host byte order. With TUNSETOFFLOAD(CSUM|TSO4|TSO6) the kernel hands
/// over TCP "super-packets" of up to 64 KiB with a partial checksum, and takes the same.
public struct VirtioNetHeader: Equatable, Sendable {
    public static let length = 10
    /// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the L4 checksum field holds only the pseudo-header sum; the
    /// sum from `checksumStart` to the end must be added.
    public static let needsChecksum: UInt8 = 1
    public static let gsoNone: UInt8 = 0
    public static let gsoTCPv4: UInt8 = 1
    public static let gsoTCPv6: UInt8 = 4

    public var flags: UInt8 = 0
    public var gsoType: UInt8 = gsoNone
    /// IP plus TCP header length of a GSO packet.
    public var headerLength: UInt16 = 0
    /// Payload bytes per segment the kernel cuts a GSO packet into.
    public var gsoSize: UInt16 = 0
    /// Where the partial checksum's sum starts (the L4 header), counted from the IP header.
    public var checksumStart: UInt16 = 0
    /// Where the checksum field is, counted from `checksumStart`.
    public var checksumOffset: UInt16 = 0

    public init() {}

    /// Decodes the first 10 bytes of `bytes` (the caller checked there are 10).
    public init(_ bytes: UnsafeRawBufferPointer) {
        flags = bytes[0]
        gsoType = bytes[1]
        headerLength = bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self)
        gsoSize = bytes.loadUnaligned(fromByteOffset: 4, as: UInt16.self)
        checksumStart = bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)
        checksumOffset = bytes.loadUnaligned(fromByteOffset: 8, as: UInt16.self)
    }

    /// Encodes into the first 10 bytes of `bytes`.
    public func write(into bytes: UnsafeMutableRawBufferPointer) {
        bytes[0] = flags
        bytes[1] = gsoType
        bytes.storeBytes(of: headerLength, toByteOffset: 2, as: UInt16.self)
        bytes.storeBytes(of: gsoSize, toByteOffset: 4, as: UInt16.self)
        bytes.storeBytes(of: checksumStart, toByteOffset: 6, as: UInt16.self)
        bytes.storeBytes(of: checksumOffset, toByteOffset: 8, as: UInt16.self)
    }

    public var needsChecksumCompletion: Bool { flags & Self.needsChecksum != 0 }
}
