/// Answers an ICMP echo request (ping) the way the destination host would, so that `ping` through
/// the tunnel sees replies. The client writes the reply into the TUN.
///
/// The reply goes from the request's destination to its source with the same identifier, sequence
/// number and data. IPv4: a 20-byte header (the request's options are not reflected), the request's
/// type of service, TTL 64, DF set. IPv6: the fixed header only (the request's extension headers
/// are not reflected), the request's traffic class, hop limit 64; the ICMPv6 checksum covers the
/// pseudo-header.
public enum ICMPEchoReply {
    /// Writes the reply answering the raw IP packet `packet` into `buffer` and returns its length.
    ///
    /// Throws what parsing `packet` throws; `.fragment` (reassemble first); `.unsupportedProtocol`
    /// for anything but ICMP over IPv4 and ICMPv6 over IPv6; `.badChecksum` for a bad IPv4 header or
    /// ICMP checksum; `.notAnswered(.notEchoRequest)`; `.notAnswered(.multicastOrBroadcast)` for a
    /// request to a group or broadcast address (the reply would have to come from it), and
    /// `.notAnswered(.sourceNotUnicast)`. Traps if `buffer` is shorter than the reply:
    /// `packet.count` bytes always suffice. `buffer` must not overlap `packet`.
    public static func emit(
        answering packet: UnsafeRawBufferPointer, identification: UInt16 = 0,
        into buffer: UnsafeMutableRawBufferPointer
    ) throws(WireError) -> Int {
        guard let first = packet.first else { throw .truncated(.ip) }
        switch first >> 4 {
        case 4:
            let ip = try IPv4Packet(validating: packet)
            if !ip.verifyChecksum() { throw .badChecksum(.ipv4) }
            if ip.isFragment { throw .fragment }
            guard ip.protocol == .icmp else { throw .unsupportedProtocol(ip.protocol) }
            let request = try ICMPv4Message(validating: ip.payload)
            guard request.isEchoRequest else { throw .notAnswered(.notEchoRequest) }
            guard request.verifyChecksum() else { throw .badChecksum(.icmp) }
            try check(source: ip.source, destination: ip.destination)
            let total = IPv4Header.length + request.bytes.count
            precondition(buffer.count >= total, "buffer too small for the echo reply")
            IPv4Header(
                source: ip.destination, destination: ip.source, protocol: .icmp, payloadLength: request.bytes.count,
                typeOfService: ip.typeOfService, identification: identification
            ).emit(into: buffer)
            let reply = UnsafeMutableRawBufferPointer(rebasing: buffer[IPv4Header.length..<total])
            reply.copyMemory(from: request.bytes)
            ICMPHeader(echoType: ICMPv4Type.echoReply, identifier: request.identifier, sequenceNumber: request.sequenceNumber)
                .emit(into: reply)
            return total
        case 6:
            let ip = try IPv6Packet(validating: packet)
            if ip.isFragment { throw .fragment }
            guard ip.transportProtocol == .icmpv6 else { throw .unsupportedProtocol(ip.transportProtocol) }
            let request = try ICMPv6Message(validating: ip.transport)
            guard request.isEchoRequest else { throw .notAnswered(.notEchoRequest) }
            guard request.verifyChecksum(source: ip.source, destination: ip.destination) else { throw .badChecksum(.icmpv6) }
            try check(source: ip.source, destination: ip.destination)
            let total = IPv6Header.length + request.bytes.count
            precondition(buffer.count >= total, "buffer too small for the echo reply")
            IPv6Header(
                source: ip.destination, destination: ip.source, nextHeader: .icmpv6, payloadLength: request.bytes.count,
                trafficClass: ip.trafficClass
            ).emit(into: buffer)
            let reply = UnsafeMutableRawBufferPointer(rebasing: buffer[IPv6Header.length..<total])
            reply.copyMemory(from: request.bytes)
            ICMPHeader(echoType: ICMPv6Type.echoReply, identifier: request.identifier, sequenceNumber: request.sequenceNumber)
                .emit(into: reply, source: ip.destination, destination: ip.source)
            return total
        case let version:
            throw .badVersion(version)
        }
    }

    /// RFC 1122 §3.2.2.6 and RFC 4443 §4.1: a reply comes from a unicast address of the host asked
    /// and goes to one host.
    private static func check(source: IPAddress, destination: IPAddress) throws(WireError) {
        if destination.isMulticastOrBroadcast { throw .notAnswered(.multicastOrBroadcast) }
        if !source.isSingleHostSource { throw .notAnswered(.sourceNotUnicast) }
    }
}
