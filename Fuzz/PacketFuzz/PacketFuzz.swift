// libFuzzer entry point for the SluiceWire parsers, against a SluiceWire built with -enable-testing
// (see Fuzz/README.md).
//
// Beyond "never traps", it checks properties that must hold for any input:
// - whatever TCPReset emits parses back as a TCP RST with valid IP and TCP checksums, endpoints swapped;
// - whatever ICMPEchoReply emits parses back as the matching echo reply, checksums good, addresses
//   swapped, no longer than the request; whatever ICMPErrorMessage emits parses back as an ICMP error
//   within 576 / 1280 bytes whose quote is the start of the packet;
// - a header parsed from a packet and emitted again parses back to the same header value;
// - a packet cut by IPv4Fragmenter / IPv6Fragmenter (MTU taken from the input) comes back from
//   FragmentReassembler as it was (IPv4: but for DF and the header checksum), each fragment within
//   the MTU;
// - a UDP packet written by UDPPacket (endpoints and payload taken from the input) summarises back;
// - Checksum.sum agrees with a plain 16-bit loop.
@testable import SluiceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func packetFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    checkChecksum(bytes)
    let summary = try? PacketSummary(parsing: bytes, checks: .all)
    _ = try? PacketSummary(parsing: bytes, checks: [])
    exerciseIPv4(bytes)
    exerciseIPv6(bytes)
    exerciseTransport(bytes)
    checkReset(answering: bytes, summary: summary)
    exerciseICMP(bytes)
    checkEchoReply(answering: bytes)
    checkICMPErrors(about: bytes)
    checkFragmentation(bytes)
    checkUDPPacket(bytes)
    return 0
}

private func checkChecksum(_ bytes: UnsafeRawBufferPointer) {
    var sum: UInt32 = 0
    var i = 0
    while i + 1 < bytes.count {
        sum += UInt32(bytes[i]) << 8 | UInt32(bytes[i + 1])
        sum = (sum & 0xFFFF) + (sum >> 16)
        i += 2
    }
    if i < bytes.count { sum += UInt32(bytes[i]) << 8 }
    while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
    precondition(Checksum.sum(bytes) == UInt16(sum), "Checksum.sum disagrees with the reference")
}

private func exerciseIPv4(_ bytes: UnsafeRawBufferPointer) {
    guard let ip = try? IPv4Packet(validating: bytes) else { return }
    _ = ip.verifyChecksum()
    _ = (ip.typeOfService, ip.identification, ip.dontFragment, ip.isFragment, ip.timeToLive, ip.headerChecksum)
    _ = ip.optionsRange
    _ = ip.pseudoHeaderSum
    let header = IPv4Header(ip)
    withScratch(IPv4Header.length + header.payloadLength) { out in
        header.emit(into: out)
        let again = try? IPv4Packet(validating: UnsafeRawBufferPointer(out))
        precondition(again.map { IPv4Header($0) } == header, "IPv4 header round trip")
        precondition(again?.verifyChecksum() == true, "emitted IPv4 checksum")
    }
}

private func exerciseIPv6(_ bytes: UnsafeRawBufferPointer) {
    guard let ip = try? IPv6Packet(validating: bytes) else { return }
    _ = (ip.trafficClass, ip.flowLabel, ip.hopLimit, ip.fragment, ip.isFragment, ip.transport.count)
    _ = ip.pseudoHeaderSum
    let header = IPv6Header(ip)
    withScratch(IPv6Header.length) { out in
        header.emit(into: out)
        // The emitted header alone claims a payload it does not have; check the fixed fields only.
        let raw = UnsafeRawBufferPointer(out)
        precondition(raw.elementsEqual(UnsafeRawBufferPointer(rebasing: bytes[0..<40])), "IPv6 header round trip")
    }
}

private func exerciseTransport(_ bytes: UnsafeRawBufferPointer) {
    if let tcp = try? TCPSegment(validating: bytes) {
        var options = tcp.options
        while options.next() != nil {}
        _ = (tcp.maximumSegmentSize, tcp.windowScale, tcp.sequenceLength, tcp.payload.count, tcp.urgentPointer)
        let source = IPAddress.v4(0x0A00_0001), destination = IPAddress.v6(1, 2)
        _ = tcp.verifyChecksum(source: source, destination: .v4(0x0A00_0002))
        _ = tcp.verifyChecksum(source: destination, destination: destination)
        let header = TCPHeader(tcp)
        withScratch(header.length + 3) { out in
            header.emit(into: out, source: source, destination: .v4(0x0A00_0002))
            let again = try? TCPSegment(validating: UnsafeRawBufferPointer(out))
            precondition(again.map { TCPHeader($0) } == header, "TCP header round trip")
            precondition(again?.verifyChecksum(source: source, destination: .v4(0x0A00_0002)) == true, "emitted TCP checksum")
        }
    }
    if let udp = try? UDPDatagram(validating: bytes) {
        _ = udp.verifyChecksum(source: .v4(1), destination: .v4(2))
        _ = udp.verifyChecksum(source: .v6(1, 2), destination: .v6(3, 4))
        let header = UDPHeader(udp)
        withScratch(udp.bytes.count) { out in
            out.copyMemory(from: udp.bytes)
            header.emit(into: out, source: .v6(1, 2), destination: .v6(3, 4))
            let again = try? UDPDatagram(validating: UnsafeRawBufferPointer(out))
            precondition(again?.verifyChecksum(source: .v6(1, 2), destination: .v6(3, 4)) == true, "emitted UDP checksum")
        }
    }
}

private func checkReset(answering bytes: UnsafeRawBufferPointer, summary: PacketSummary?) {
    withScratch(TCPReset.maximumLength) { out in
        guard let length = try? TCPReset.emit(answering: bytes, into: out) else { return }
        let rst = UnsafeRawBufferPointer(rebasing: out[0..<length])
        guard let parsed = try? PacketSummary(parsing: rst, checks: .all) else {
            preconditionFailure("the RST does not parse back")
        }
        precondition(parsed.tcpFlags.contains(.rst), "the RST has no RST flag")
        if let summary {
            precondition(parsed.source == summary.destination && parsed.destination == summary.source, "endpoints not swapped")
        }
    }
}

private func exerciseICMP(_ bytes: UnsafeRawBufferPointer) {
    _ = try? ICMPSummary(parsing: bytes, checks: .all)
    let summary = try? ICMPSummary(parsing: bytes, checks: [])
    if let summary {
        precondition(summary.messageOffset + 8 <= summary.length && summary.length <= bytes.count, "ICMP summary ranges")
    }
    if let icmp = try? ICMPv4Message(validating: bytes) {
        _ = (icmp.isError, icmp.isEchoRequest, icmp.nextHopMTU, icmp.body.count, icmp.verifyChecksum())
        withScratch(bytes.count) { out in
            out.copyMemory(from: bytes)
            ICMPHeader(icmp).emit(into: out)
            precondition(Checksum.verify(UnsafeRawBufferPointer(out)), "emitted ICMP checksum")
        }
    }
    if let icmp = try? ICMPv6Message(validating: bytes) {
        _ = (icmp.isError, icmp.mtu, icmp.verifyChecksum(source: .v6(1, 2), destination: .v6(3, 4)))
        withScratch(bytes.count) { out in
            out.copyMemory(from: bytes)
            ICMPHeader(icmp).emit(into: out, source: .v6(1, 2), destination: .v6(3, 4))
            precondition(
                (try? ICMPv6Message(validating: UnsafeRawBufferPointer(out)))?.verifyChecksum(source: .v6(1, 2), destination: .v6(3, 4)) == true,
                "emitted ICMPv6 checksum")
        }
    }
}

private func checkEchoReply(answering bytes: UnsafeRawBufferPointer) {
    withScratch(max(bytes.count, 1)) { out in
        guard let length = try? ICMPEchoReply.emit(answering: bytes, identification: 7, into: out) else { return }
        precondition(length <= bytes.count, "echo reply longer than the request")
        guard let request = try? ICMPSummary(parsing: bytes, checks: .all),
            case .echoRequest(let identifier, let sequence) = request.kind
        else { preconditionFailure("answered something that is not a good echo request") }
        guard let reply = try? ICMPSummary(parsing: UnsafeRawBufferPointer(rebasing: out[0..<length]), checks: .all) else {
            preconditionFailure("the echo reply does not parse back")
        }
        precondition(reply.kind == .echoReply(identifier: identifier, sequenceNumber: sequence), "echo reply kind")
        precondition(reply.source == request.destination && reply.destination == request.source, "addresses not swapped")
        precondition(length - reply.messageOffset == request.length - request.messageOffset, "echo data changed length")
    }
}

private func checkICMPErrors(about bytes: UnsafeRawBufferPointer) {
    let source: IPAddress = bytes.first.map { $0 >> 4 == 6 } == true ? .v6(0x2001_0db8 << 32, 9) : .v4(0x0A09_0909)
    for kind: ICMPErrorMessage.Kind in [.portUnreachable, .hostUnreachable, .tooBig(mtu: 1280)] {
        withScratch(ICMPErrorMessage.maximumLength) { out in
            guard let length = try? ICMPErrorMessage.emit(kind, about: bytes, from: source, into: out) else { return }
            precondition(length <= (source.isIPv4 ? ICMPErrorMessage.maximumIPv4Length : ICMPErrorMessage.maximumIPv6Length), "error too long")
            guard let error = try? ICMPSummary(parsing: UnsafeRawBufferPointer(rebasing: out[0..<length]), checks: .all) else {
                preconditionFailure("the ICMP error does not parse back")
            }
            precondition(error.kind == .error && error.source == source, "ICMP error kind or source")
            let quote = UnsafeRawBufferPointer(rebasing: out[error.messageOffset + 8..<length])
            precondition(quote.elementsEqual(UnsafeRawBufferPointer(rebasing: bytes[0..<quote.count])), "quote is not the packet's start")
        }
    }
}

/// Fragments the packet for an MTU taken from its last byte and puts it back together.
private func checkFragmentation(_ bytes: UnsafeRawBufferPointer) {
    guard let last = bytes.last, let first = bytes.first else { return }
    let isIPv4 = first >> 4 == 4
    let mtu = isIPv4 ? 28 + Int(last) * 4 : 64 + Int(last) * 8
    var pieces: [[UInt8]] = []
    let identification = UInt32(last) << 8
    withScratch(mtu) { scratch in
        if isIPv4 {
            _ = try? IPv4Fragmenter.fragment(bytes, mtu: mtu, scratch: scratch) { pieces.append(Array($0)) }
        } else {
            _ = try? IPv6Fragmenter.fragment(bytes, mtu: mtu, identification: identification, scratch: scratch) { pieces.append(Array($0)) }
        }
    }
    guard pieces.count > 1 else { return }
    precondition(pieces.allSatisfy { $0.count <= mtu }, "fragment larger than the MTU")
    let reassembler = FragmentReassembler()
    var result: [UInt8]? = nil
    for piece in pieces.reversed() {
        piece.withUnsafeBytes {
            if case .reassembled(let packet) = reassembler.feed($0, now: 0) { result = Array(packet) }
        }
    }
    let c = reassembler.counters
    // Refusals that a valid original can still earn: an IPv6 chain that the first fragment cuts, an
    // unfragmentable part over 1,024 bytes, an IPv4 packet that was itself a fragment.
    guard let result else {
        precondition(c.overlapping == 0 && c.inconsistent == 0 && c.duplicates == 0, "fragments disagree with each other")
        return
    }
    if isIPv4 {
        let original = try! IPv4Packet(validating: bytes)
        precondition(result.count == original.bytes.count, "IPv4 reassembly length")
        for i in 0..<result.count where ![6, 7, 10, 11].contains(i) {
            precondition(result[i] == original.bytes[i], "IPv4 reassembly differs at \(i)")
        }
        precondition(result.withUnsafeBytes { (try? IPv4Packet(validating: $0))?.verifyChecksum() } == true, "IPv4 reassembly checksum")
    } else {
        precondition(result.elementsEqual(try! IPv6Packet(validating: bytes).bytes), "IPv6 reassembly differs")
    }
}

/// Writes a UDP packet whose endpoints and payload come from the input and summarises it back.
private func checkUDPPacket(_ bytes: UnsafeRawBufferPointer) {
    guard bytes.count >= 40 else { return }
    let v6 = bytes[0] & 1 == 1
    let source = SocketEndpoint(
        address: v6 ? IPAddress(v6In: bytes, at: 0) : IPAddress(v4In: bytes, at: 0), port: bytes.readU16(at: 16))
    let destination = SocketEndpoint(
        address: v6 ? IPAddress(v6In: bytes, at: 18) : IPAddress(v4In: bytes, at: 18), port: bytes.readU16(at: 34))
    let payload = bytes.slice(36..<bytes.count)
    withScratch(UDPPacket.headerLength(for: source.address) + payload.count) { out in
        guard let length = try? UDPPacket.emit(from: source, to: destination, payload: payload, identification: 1, into: out) else {
            precondition(payload.count > (v6 ? UDPPacket.maximumIPv6Payload : UDPPacket.maximumIPv4Payload), "UDPPacket refused")
            return
        }
        guard let s = try? PacketSummary(parsing: UnsafeRawBufferPointer(rebasing: out[0..<length]), checks: .all) else {
            preconditionFailure("the UDP packet does not parse back")
        }
        precondition(s.source == source && s.destination == destination && s.payloadRange.count == payload.count, "UDP fields")
    }
}

private func withScratch(_ count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void) {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 8)
    defer { buffer.deallocate() }
    buffer.initializeMemory(as: UInt8.self, repeating: 0)
    body(buffer)
}
