// libFuzzer entry point for FragmentReassembler, against a SluiceWire built with -enable-testing
// (see Fuzz/README.md), so that it sees the reassembler's internals.
//
// The first byte picks a mode:
// - even: a sequence of packets, each `advance` u8 (milliseconds to move the clock on; 255 means
//   "call expire(now:) too"), `length` u16, then `length` bytes, fed to a reassembler with small
//   limits (4 datagrams, 8 KiB, 50 ms) so that eviction and timeouts happen. After every call the
//   limits hold, the byte count matches the slots, and whatever is reassembled is a valid, whole,
//   unfragmented IPv4 or IPv6 packet.
// - odd: a UDP datagram (IPv6 if bit 1 is set; length from bytes 1–2, below 2 KiB unless bit 2 is
//   set; bytes from the rest) is written with UDPPacket, cut by the fragmenter for an MTU from byte 3,
//   and its fragments are fed in an order, with duplicates, that the remaining bytes choose; then all
//   of them in order. It must come back exactly once, byte for byte.
import Glibc
@testable import SluiceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func reassemblyFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let mode = bytes.first else { return 0 }
    if mode & 1 == 0 {
        feedSequence(bytes.slice(1..<size))
    } else {
        splitAndReassemble(mode: mode, bytes.slice(1..<size))
    }
    return 0
}

// One reassembler per mode, emptied before each input: its slots are reused as in a long-running
// client, so stale slot memory is in play too, and nothing of an earlier input may show through.
private let limits = FragmentReassembler.Limits(maximumReassemblies: 4, maximumBufferedBytes: 8192, timeoutMilliseconds: 50)
nonisolated(unsafe) private let small = FragmentReassembler(limits: limits)
nonisolated(unsafe) private let standard = FragmentReassembler()

private func feedSequence(_ input: UnsafeRawBufferPointer) {
    let reassembler = small
    reassembler.removeAll()
    var now: UInt64 = 0
    var at = 0
    while input.count - at >= 3 {
        let advance = input[at]
        let length = min(Int(input.readU16(at: at + 1)), input.count - at - 3)
        let packet = input.slice(at + 3..<at + 3 + length)
        at += 3 + length
        now += UInt64(advance)
        if advance == 255 { reassembler.expire(now: now) }
        if case .reassembled(let whole) = reassembler.feed(packet, now: now) { checkWhole(whole) }
        precondition(reassembler.bufferedBytes <= limits.maximumBufferedBytes, "over the byte budget")
        precondition(reassembler.reassemblyCount <= limits.maximumReassemblies, "too many datagrams")
        precondition(reassembler.slots.count <= limits.maximumReassemblies, "too many slots")
        let held = reassembler.slots.reduce(0) { $0 + ($1.inUse ? $1.received : 0) }
        precondition(held == reassembler.bufferedBytes, "byte count out of step with the slots")
    }
    reassembler.removeAll()
    precondition(reassembler.bufferedBytes == 0 && reassembler.reassemblyCount == 0, "removeAll left something")
}

private func checkWhole(_ packet: UnsafeRawBufferPointer) {
    switch packet.first.map({ $0 >> 4 }) {
    case 4:
        guard let ip = try? IPv4Packet(validating: packet) else { preconditionFailure("reassembled IPv4 does not parse") }
        precondition(ip.bytes.count == packet.count && !ip.isFragment && ip.verifyChecksum(), "reassembled IPv4 is not whole")
    case 6:
        guard let ip = try? IPv6Packet(validating: packet) else { preconditionFailure("reassembled IPv6 does not parse") }
        precondition(ip.bytes.count == packet.count && ip.fragment == nil, "reassembled IPv6 is not whole")
    default:
        preconditionFailure("reassembled packet of no IP version")
    }
}

private func splitAndReassemble(mode: UInt8, _ input: UnsafeRawBufferPointer) {
    guard input.count >= 4 else { return }
    let v6 = mode & 2 != 0
    let source = SocketEndpoint(address: v6 ? .v6(0xFD00 << 48, 1) : .v4(0x0A00_0001), port: 5000)
    let destination = SocketEndpoint(address: v6 ? .v6(0xFD00 << 48, 2) : .v4(0x0A00_0002), port: 53)
    // Small datagrams unless bit 2 asks for the full range: a 65 KB one in 8-byte pieces is slow.
    let maximum = mode & 4 != 0 ? (v6 ? UDPPacket.maximumIPv6Payload : UDPPacket.maximumIPv4Payload) : 2047
    let payloadLength = Int(input.readU16(at: 0)) % (maximum + 1)
    let mtu = v6 ? 64 + Int(input[2]) * 8 : 28 + Int(input[2]) * 8
    let script = input.slice(3..<input.count)
    let total = UDPPacket.headerLength(for: source.address) + payloadLength
    let original = UnsafeMutableRawBufferPointer.allocate(byteCount: total, alignment: 8)
    defer { original.deallocate() }
    if script.isEmpty {
        for i in 0..<payloadLength { original[total - payloadLength + i] = UInt8(truncatingIfNeeded: i) }
    } else {
        // The script repeated: whole copies, not a loop per byte (the fuzzer traces every comparison
        // in this module, and 65 KB of them per input halved its speed).
        var at = total - payloadLength
        while at < total {
            let n = min(script.count, total - at)
            (original.baseAddress! + at).copyMemory(from: script.baseAddress!, byteCount: n)
            at += n
        }
    }
    _ = try! UDPPacket.emitHeaders(
        from: source, to: destination, payloadLength: payloadLength, identification: 0x5151, dontFragment: false, into: original)

    var pieces: [[UInt8]] = []
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: mtu, alignment: 8)
    defer { scratch.deallocate() }
    let packet = UnsafeRawBufferPointer(original)
    if v6 {
        _ = try! IPv6Fragmenter.fragment(packet, mtu: mtu, identification: 0xABCD_0123, scratch: scratch) { pieces.append(Array($0)) }
    } else {
        _ = try! IPv4Fragmenter.fragment(packet, mtu: mtu, scratch: scratch) { pieces.append(Array($0)) }
    }
    precondition(pieces.allSatisfy { $0.count <= mtu }, "fragment larger than the MTU")
    if pieces.count == 1 {
        precondition(sameBytes(pieces[0], packet), "a packet that fits was changed")
        return
    }
    let reassembler = standard
    reassembler.removeAll()
    let before = reassembler.counters
    var result: [UInt8]? = nil
    func feed(_ piece: [UInt8]) {
        piece.withUnsafeBytes {
            if case .reassembled(let whole) = reassembler.feed($0, now: 0) {
                precondition(result == nil, "reassembled twice")
                result = Array(whole)
            }
        }
    }
    for choice in script where result == nil { feed(pieces[Int(choice) % pieces.count]) }
    for piece in pieces where result == nil { feed(piece) }
    guard let result else { preconditionFailure("the fragments did not reassemble: \(reassembler.counters)") }
    precondition(sameBytes(result, packet), "reassembled bytes differ from the original")
    let c = reassembler.counters
    precondition(
        c.overlapping == before.overlapping && c.inconsistent == before.inconsistent && c.malformed == before.malformed
            && c.tooBig == before.tooBig, "a valid fragment was refused")
}

/// Byte equality through libc's memcmp: a Swift loop here would be traced comparison by comparison.
private func sameBytes(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
    a.count == b.count && a.withUnsafeBytes { memcmp($0.baseAddress!, b.baseAddress!, a.count) == 0 }
}
