extension FragmentReassembler {
    /// Which fragments belong together.
    struct Key: Equatable {
        var source: IPAddress
        var destination: IPAddress
        /// IPv4 protocol; IPv6 the Fragment header's next header.
        var proto: UInt8
        var identification: UInt32
    }

    /// One fragment, checked: where its data goes and, for a first fragment, the header to keep.
    struct Piece {
        var key: Key
        /// The data's offset in the datagram, in bytes.
        var offset: Int
        var data: UnsafeRawBufferPointer
        var more: Bool
        /// The bytes before the data (IPv4: the header; IPv6: the unfragmentable part, the Fragment
        /// header not included).
        var header: UnsafeRawBufferPointer
        /// IPv6: where in `header` the Next Header field naming the Fragment header is; IPv4: nil.
        var link: Int?

        enum Parsed {
            case unfragmented
            case drop(Drop)
            case piece(Piece)
        }

        /// The longest unfragmentable part taken: the room kept in front of the data in a slot.
        static let maximumHeaderLength = 1024

        static func parse(_ packet: UnsafeRawBufferPointer, verifyIPv4Checksum: Bool) -> Parsed {
            guard let first = packet.first else { return .drop(.malformed(.truncated(.ip))) }
            do {
                switch first >> 4 {
                case 4: return try parseIPv4(packet, verifyChecksum: verifyIPv4Checksum)
                case 6: return try parseIPv6(packet)
                case let version: return .drop(.malformed(.badVersion(version)))
                }
            } catch {
                return .drop(.malformed(error))
            }
        }

        private static func parseIPv4(_ packet: UnsafeRawBufferPointer, verifyChecksum: Bool) throws(WireError) -> Parsed {
            let ip = try IPv4Packet(validating: packet)
            guard ip.isFragment else { return .unfragmented }
            if verifyChecksum, !ip.verifyChecksum() { return .drop(.malformed(.badChecksum(.ipv4))) }
            let data = ip.payload
            if let drop = check(offset: ip.fragmentOffset, length: data.count, more: ip.moreFragments, headerLength: ip.headerLength, ipv6: false) {
                return .drop(drop)
            }
            let key = Key(
                source: ip.source, destination: ip.destination, proto: ip.protocol.rawValue,
                identification: UInt32(ip.identification))
            return .piece(
                Piece(
                    key: key, offset: ip.fragmentOffset, data: data, more: ip.moreFragments,
                    header: ip.bytes.slice(0..<ip.headerLength), link: nil))
        }

        private static func parseIPv6(_ packet: UnsafeRawBufferPointer) throws(WireError) -> Parsed {
            let ip = try IPv6Packet(validating: packet)
            guard let fragment = ip.fragment, let at = ip.fragmentHeaderOffset, !fragment.isAtomic else { return .unfragmented }
            let data = ip.bytes.slice(at + IPv6Fragmenter.fragmentHeaderLength..<ip.bytes.count)
            if let drop = check(offset: fragment.offset, length: data.count, more: fragment.moreFragments, headerLength: at, ipv6: true) {
                return .drop(drop)
            }
            let key = Key(
                source: ip.source, destination: ip.destination, proto: ip.bytes[at], identification: fragment.identification)
            return .piece(
                Piece(
                    key: key, offset: fragment.offset, data: data, more: fragment.moreFragments,
                    header: ip.bytes.slice(0..<at), link: ip.fragmentLinkOffset))
        }

        /// The length rules: data present, a multiple of 8 unless last, and a datagram of at most
        /// 65,535 bytes (IPv4 total length: header and data; IPv6 payload length: the extension
        /// headers of the unfragmentable part and the data).
        private static func check(offset: Int, length: Int, more: Bool, headerLength: Int, ipv6: Bool) -> Drop? {
            if length == 0 || (more && length % 8 != 0) { return .badLength }
            if headerLength > maximumHeaderLength { return .tooBig }
            let counted = ipv6 ? headerLength - IPv6Header.length : headerLength
            if counted + offset + length > 0xFFFF { return .tooBig }
            return nil
        }
    }
}
