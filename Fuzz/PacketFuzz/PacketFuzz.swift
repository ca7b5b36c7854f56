// libFuzzer entry point for the SluiceWire parsers. Compiled together with Sources/SluiceWire/*.swift
// into one module (see Fuzz/README.md), so it needs no import.
//
// Beyond "never traps", it checks properties that must hold for any input:
// - whatever TCPReset emits parses back as a TCP RST with valid IP and TCP checksums, endpoints swapped;
// - a header parsed from a packet and emitted again parses back to the same header value;
// - Checksum.sum agrees with a plain 16-bit loop.

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

private func withScratch(_ count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void) {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 8)
    defer { buffer.deallocate() }
    buffer.initializeMemory(as: UInt8.self, repeating: 0)
    body(buffer)
}
