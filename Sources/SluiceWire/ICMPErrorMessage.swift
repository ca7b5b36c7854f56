/// ICMP and ICMPv6 errors toward an application: what a router or the destination host would have
/// sent about a packet the application sent. The client turns a relay's DATAGRAM_ERROR into one of
/// these, so that the application's socket sees `ECONNREFUSED`, `EHOSTUNREACH` or a path MTU.
///
/// The error goes from `source` (the remote address, or whatever host stands for the failing hop)
/// to the offending packet's source and quotes the start of the offending packet: as much as keeps
/// an IPv4 error within 576 bytes (RFC 1812 §4.3.2.3; RFC 792 asks for the IP header and 8 bytes at
/// least), an ICMPv6 error within 1280 bytes (RFC 4443 §2.4(c)).
///
/// The rules of RFC 1122 §3.2.2 and RFC 4443 §2.4(e) are enforced: no error about an ICMP error, a
/// later IPv4 fragment, a packet to a multicast or broadcast address (ICMPv6 Packet Too Big
/// excepted), or a packet from an address that is not one host. They throw `.notAnswered`.
///
/// IPv4 errors carry the offending type of service's low bits under precedence "internetwork
/// control" (0xC0), as Linux sends them, TTL 64 and DF; ICMPv6 errors have hop limit 64.
public enum ICMPErrorMessage {
    /// Which error.
    public enum Kind: Hashable, Sendable {
        /// IPv4 type 3 (destination unreachable) code 3; ICMPv6 type 1 code 4.
        case portUnreachable
        /// IPv4 type 3 code 1; ICMPv6 type 1 code 3 (address unreachable).
        case hostUnreachable
        /// IPv4 type 3 code 4, fragmentation needed, with the next-hop MTU (RFC 1191); ICMPv6 type 2,
        /// Packet Too Big, with the MTU.
        case tooBig(mtu: UInt16)
        /// IPv4 type 3 code 13, communication administratively prohibited (RFC 1812); ICMPv6 type 1
        /// code 1: a policy refused the packet (the relay's destination policy).
        case administrativelyProhibited
    }

    /// The longest IPv4 error: 576 bytes.
    public static let maximumIPv4Length = 576
    /// The longest ICMPv6 error: 1280 bytes, the IPv6 minimum MTU.
    public static let maximumIPv6Length = 1280
    /// A buffer this long takes any error.
    public static let maximumLength = maximumIPv6Length

    private static let ipv4QuoteOffset = IPv4Header.length + ICMPHeader.length
    private static let ipv6QuoteOffset = IPv6Header.length + ICMPHeader.length

    /// Writes the error about the raw IP packet `offending` (which the application sent) from
    /// `source` into `buffer` and returns its length.
    ///
    /// Throws what parsing `offending` throws (its checksums are not verified),
    /// `.addressFamilyMismatch` if `source` is not of the packet's family, and `.notAnswered`. Traps
    /// if `buffer` is shorter than the error: `maximumLength` always suffices.
    public static func emit(
        _ kind: Kind, about offending: UnsafeRawBufferPointer, from source: IPAddress,
        into buffer: UnsafeMutableRawBufferPointer
    ) throws(WireError) -> Int {
        guard let first = offending.first else { throw .truncated(.ip) }
        switch first >> 4 {
        case 4:
            let ip = try IPv4Packet(validating: offending)
            guard source.isIPv4 else { throw .addressFamilyMismatch }
            if ip.fragmentOffset != 0 { throw .notAnswered(.laterFragment) }
            if ip.protocol == .icmp, let type = ip.payload.first, ICMPv4Type.isError(type) { throw .notAnswered(.icmpError) }
            try check(kind, about: ip.source, to: ip.destination)
            let quote = min(ip.bytes.count, maximumIPv4Length - ipv4QuoteOffset)
            precondition(buffer.count >= ipv4QuoteOffset + quote, "buffer too small for the ICMP error")
            UnsafeMutableRawBufferPointer(rebasing: buffer[ipv4QuoteOffset..<ipv4QuoteOffset + quote])
                .copyMemory(from: ip.bytes.slice(0..<quote))
            return finish(kind, quote: quote, from: source, to: ip.source, typeOfService: ip.typeOfService, into: buffer)
        case 6:
            let ip = try IPv6Packet(validating: offending)
            guard !source.isIPv4 else { throw .addressFamilyMismatch }
            // A later fragment's "transport protocol" is only the first header of its data.
            if (ip.fragment?.offset ?? 0) == 0, ip.transportProtocol == .icmpv6, let type = ip.transport.first,
                ICMPv6Type.isError(type)
            {
                throw .notAnswered(.icmpError)
            }
            try check(kind, about: ip.source, to: ip.destination)
            let quote = min(ip.bytes.count, maximumIPv6Length - ipv6QuoteOffset)
            precondition(buffer.count >= ipv6QuoteOffset + quote, "buffer too small for the ICMPv6 error")
            UnsafeMutableRawBufferPointer(rebasing: buffer[ipv6QuoteOffset..<ipv6QuoteOffset + quote])
                .copyMemory(from: ip.bytes.slice(0..<quote))
            return finish(kind, quote: quote, from: source, to: ip.source, typeOfService: 0, into: buffer)
        case let version:
            throw .badVersion(version)
        }
    }

    /// Writes the error about a UDP datagram of `payloadLength` bytes that the application sent from
    /// `application` to `remote`, for when the datagram itself is gone: the quote is an IP header
    /// (IPv4: no options, DF, TTL 64) and the UDP header (checksum 0) rebuilt from those fields, which
    /// is what the application's kernel matches the error to its socket by.
    ///
    /// `payloadLength` only fills the quoted length fields and is clamped to what fits. Throws
    /// `.addressFamilyMismatch` unless all three addresses are of one family, and `.notAnswered`.
    /// Traps if `buffer` is shorter than the error: `maximumLength` always suffices.
    public static func emit(
        _ kind: Kind, aboutUDPFrom application: SocketEndpoint, to remote: SocketEndpoint, payloadLength: Int = 0,
        from source: IPAddress, into buffer: UnsafeMutableRawBufferPointer
    ) throws(WireError) -> Int {
        let v4 = source.isIPv4
        guard application.address.isIPv4 == v4, remote.address.isIPv4 == v4 else { throw .addressFamilyMismatch }
        try check(kind, about: application.address, to: remote.address)
        let ipLength = v4 ? IPv4Header.length : IPv6Header.length
        let at = v4 ? ipv4QuoteOffset : ipv6QuoteOffset
        let quote = ipLength + UDPHeader.length
        precondition(buffer.count >= at + quote, "buffer too small for the ICMP error")
        let udpLength = UDPHeader.length + max(0, min(payloadLength, 0xFFFF - UDPHeader.length - (v4 ? ipLength : 0)))
        let quoted = UnsafeMutableRawBufferPointer(rebasing: buffer[at..<at + quote])
        if v4 {
            IPv4Header(source: application.address, destination: remote.address, protocol: .udp, payloadLength: udpLength)
                .emit(into: quoted)
        } else {
            IPv6Header(source: application.address, destination: remote.address, nextHeader: .udp, payloadLength: udpLength)
                .emit(into: quoted)
        }
        quoted.writeU16(application.port, at: ipLength)
        quoted.writeU16(remote.port, at: ipLength + 2)
        quoted.writeU16(UInt16(udpLength), at: ipLength + 4)
        quoted.writeU16(0, at: ipLength + 6)
        return finish(kind, quote: quote, from: source, to: application.address, typeOfService: 0, into: buffer)
    }

    /// RFC 1122 §3.2.2 and RFC 4443 §2.4(e.3, e.6): whom an error may be about. Packet Too Big is
    /// the one error sent about a packet to a multicast group (RFC 4443 §2.4(e.3)).
    private static func check(_ kind: Kind, about source: IPAddress, to destination: IPAddress) throws(WireError) {
        if destination.isMulticastOrBroadcast {
            if case .tooBig = kind, !destination.isIPv4 {} else { throw .notAnswered(.multicastOrBroadcast) }
        }
        if !source.isSingleHostSource { throw .notAnswered(.sourceNotUnicast) }
    }

    /// Writes the IP and ICMP headers in front of the `quote` bytes already at their offset.
    private static func finish(
        _ kind: Kind, quote: Int, from source: IPAddress, to destination: IPAddress, typeOfService: UInt8,
        into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        let messageLength = ICMPHeader.length + quote
        if source.isIPv4 {
            let header: ICMPHeader
            switch kind {
            case .portUnreachable:
                header = ICMPHeader(type: ICMPv4Type.destinationUnreachable, code: ICMPv4Type.UnreachableCode.port)
            case .hostUnreachable:
                header = ICMPHeader(type: ICMPv4Type.destinationUnreachable, code: ICMPv4Type.UnreachableCode.host)
            case .tooBig(let mtu):
                header = ICMPHeader(
                    type: ICMPv4Type.destinationUnreachable, code: ICMPv4Type.UnreachableCode.fragmentationNeeded,
                    rest: UInt32(mtu))
            case .administrativelyProhibited:
                header = ICMPHeader(
                    type: ICMPv4Type.destinationUnreachable, code: ICMPv4Type.UnreachableCode.administrativelyProhibited)
            }
            IPv4Header(
                source: source, destination: destination, protocol: .icmp, payloadLength: messageLength,
                typeOfService: typeOfService & 0x1E | 0xC0
            ).emit(into: buffer)
            let total = IPv4Header.length + messageLength
            header.emit(into: UnsafeMutableRawBufferPointer(rebasing: buffer[IPv4Header.length..<total]))
            return total
        } else {
            let header: ICMPHeader
            switch kind {
            case .portUnreachable:
                header = ICMPHeader(type: ICMPv6Type.destinationUnreachable, code: ICMPv6Type.UnreachableCode.port)
            case .hostUnreachable:
                header = ICMPHeader(type: ICMPv6Type.destinationUnreachable, code: ICMPv6Type.UnreachableCode.address)
            case .tooBig(let mtu):
                header = ICMPHeader(type: ICMPv6Type.packetTooBig, code: 0, rest: UInt32(mtu))
            case .administrativelyProhibited:
                header = ICMPHeader(
                    type: ICMPv6Type.destinationUnreachable, code: ICMPv6Type.UnreachableCode.administrativelyProhibited)
            }
            IPv6Header(source: source, destination: destination, nextHeader: .icmpv6, payloadLength: messageLength)
                .emit(into: buffer)
            let total = IPv6Header.length + messageLength
            header.emit(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[IPv6Header.length..<total]), source: source,
                destination: destination)
            return total
        }
    }
}
