/// Splits an IPv6 packet into fragments that fit an MTU by inserting a Fragment header (RFC 8200
/// §4.5).
///
/// Routers never fragment IPv6; only the source may. The client is the source of the packets it
/// synthesises toward the application, and a 65,507-byte UDP reply reaches an application behind a
/// 1500-byte TUN only in fragments.
///
/// The unfragmentable part — the fixed header and the extension headers up to and including the last
/// routing header, else the hop-by-hop header — is repeated in every fragment, with its last Next
/// Header field set to 44 and the payload length fixed; the Fragment header follows with the caller's
/// identification; then the fragmentable part's bytes, a multiple of 8 in every fragment but the
/// last. Nothing is allocated: each fragment is written into the caller's scratch buffer and handed
/// to a callback before the next one is written.
public enum IPv6Fragmenter {
    /// The Fragment header's length.
    public static let fragmentHeaderLength = 8

    /// Calls `body` with each fragment of `packet` in order and returns how many there were.
    ///
    /// A packet of at most `mtu` bytes is handed over as it is (cut to its payload length), without a
    /// copy. Otherwise each fragment is written into `scratch` and is valid only during its call.
    ///
    /// Throws what `IPv6Packet(validating:)` throws; `.badExtensionHeader(.fragment)` for a packet that
    /// already has a Fragment header; `.mtuTooSmall(mtu)` if `mtu` leaves fewer than 8 data bytes after
    /// the unfragmentable part and the Fragment header (1280, the IPv6 minimum, suffices unless the
    /// extension headers are huge). Traps if `scratch` is shorter than `mtu` when fragmenting.
    @discardableResult
    public static func fragment(
        _ packet: UnsafeRawBufferPointer, mtu: Int, identification: UInt32, scratch: UnsafeMutableRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) -> Void
    ) throws(WireError) -> Int {
        let ip = try IPv6Packet(validating: packet)
        if ip.fragment != nil { throw .badExtensionHeader(.fragment) }
        let bytes = ip.bytes
        if bytes.count <= mtu {
            body(bytes)
            return 1
        }
        let (unfragmentable, nextHeaderField) = unfragmentablePart(bytes)
        let headerLength = unfragmentable + fragmentHeaderLength
        let chunk = (mtu - headerLength) & ~7
        guard chunk >= 8 else { throw .mtuTooSmall(mtu) }
        precondition(scratch.count >= mtu, "scratch buffer smaller than the MTU")

        scratch.copyMemory(from: bytes.slice(0..<unfragmentable))
        let fragmentableNextHeader = bytes[nextHeaderField]
        scratch[nextHeaderField] = IPProtocol.fragment.rawValue
        scratch[unfragmentable] = fragmentableNextHeader
        scratch[unfragmentable + 1] = 0
        scratch.writeU32(identification, at: unfragmentable + 4)
        let data = bytes.slice(unfragmentable..<bytes.count)
        var sent = 0
        var count = 0
        while sent < data.count {
            let end = min(sent + chunk, data.count)
            let total = headerLength + end - sent
            UnsafeMutableRawBufferPointer(rebasing: scratch[headerLength..<total]).copyMemory(from: data.slice(sent..<end))
            scratch.writeU16(UInt16(total - IPv6Header.length), at: 4)
            scratch.writeU16(UInt16(sent) | (end < data.count ? 1 : 0), at: unfragmentable + 2)
            body(UnsafeRawBufferPointer(rebasing: scratch[0..<total]))
            sent = end
            count += 1
        }
        return count
    }

    /// The length of the unfragmentable part and the offset of the Next Header field that names the
    /// first header after it (6, the fixed header's, when there is no extension header to keep).
    /// `bytes` was validated by `IPv6Packet`, which walked the same headers; the bounds are checked
    /// again all the same.
    static func unfragmentablePart(_ bytes: UnsafeRawBufferPointer) -> (length: Int, nextHeaderField: Int) {
        var next = IPProtocol(rawValue: bytes[6])
        var offset = IPv6Header.length
        var field = 6
        var result = (length: IPv6Header.length, nextHeaderField: 6)
        while next == .hopByHop || next == .routing || next == .destinationOptions {
            guard bytes.count - offset >= 8 else { break }
            let length = (Int(bytes[offset + 1]) + 1) * 8
            guard bytes.count - offset >= length else { break }
            field = offset
            offset += length
            // Destination options belong to the unfragmentable part only when a routing header
            // follows them (RFC 8200 §4.1 order); hop-by-hop and routing always do.
            if next != .destinationOptions { result = (offset, field) }
            next = IPProtocol(rawValue: bytes[field])
        }
        return result
    }
}
