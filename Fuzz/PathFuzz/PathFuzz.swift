// libFuzzer entry point for the UDP path's packet decoder (docs/protocol.md §8) and its replay
// window; scripts/fuzz.sh builds it (Fuzz/README.md).
//
// The input is one received packet. Beyond "never traps": a header that parses emits the same 16
// bytes; the bytes after it, taken as the plaintext of each kind, decode or fail cleanly, and what
// decodes re-encodes to the same bytes (a probe's padding as zeros, so only when it was zeros; a
// bundle entry by entry, every one it counted). And
// the input, read as a sequence of counters, drives the replay window against a plain model of it:
// a set of the counters accepted and the newest one.
@testable import SluiceCrypto
@testable import SluiceMux
@testable import SluiceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func pathFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size <= 65_535 else { return 0 }  // no UDP payload is longer
    let packet = UnsafeRawBufferPointer(start: data, count: size)
    decodePacket(packet)
    for kind in [PathHeader.Kind.datagram, .probe, .probeReply, .bundle] { decodePlaintext(kind, packet) }
    replayWindow(packet)
    return 0
}

private func decodePacket(_ packet: UnsafeRawBufferPointer) {
    let header: PathHeader
    do {
        header = try PathHeader(parsing: packet)
    } catch {
        _ = error.description
        return
    }
    precondition(packet.count >= PathHeader.minimumPacket, "a packet shorter than the minimum parsed")
    var out = [UInt8](repeating: 0xFF, count: PathHeader.length)
    out.withUnsafeMutableBytes { header.emit(into: $0) }
    precondition(out.elementsEqual(packet.prefix(PathHeader.length)), "the header does not emit the same bytes")
}

private func decodePlaintext(_ kind: PathHeader.Kind, _ plaintext: UnsafeRawBufferPointer) {
    let message: PathMessage
    do {
        message = try PathMessage.decode(kind, plaintext)
    } catch {
        _ = error.description
        return
    }
    var out = [UInt8](repeating: 0xEE, count: plaintext.count + 64)
    switch message {
    case .datagram(let stream, let endpoint, let payload):
        precondition(kind == .datagram)
        let n = out.withUnsafeMutableBytes { PathMessage.encodeDatagram(stream: stream, endpoint: endpoint, payload: payload, into: $0) }
        precondition(n == plaintext.count, "a datagram re-encodes to another length")
        precondition(out.prefix(plaintext.count).elementsEqual(plaintext), "a datagram re-encodes to other bytes")
    case .bundle(let entries):
        precondition(kind == .bundle && entries.count > 0)
        var at = 0
        var seen = 0
        for entry in entries {
            let n = out.withUnsafeMutableBytes { buffer in
                PathMessage.encodeBundleEntry(stream: entry.stream, endpoint: entry.endpoint, payload: entry.payload,
                                              into: UnsafeMutableRawBufferPointer(rebasing: buffer[at...]))
            }
            precondition(n != nil, "a bundle's entry does not re-encode")
            at += n!
            seen += 1
        }
        precondition(seen == entries.count, "a bundle yields another number of datagrams than it counted")
        precondition(at == plaintext.count && out.prefix(at).elementsEqual(plaintext), "a bundle re-encodes to other bytes")
    case .probe(let opaque, let length):
        precondition(kind == .probe || kind == .probeReply)
        precondition(length == plaintext.count)
        let n = out.withUnsafeMutableBytes { PathMessage.encodeProbe(opaque: opaque, length: length, into: $0) }
        precondition(n == length, "a probe re-encodes to another length")
        if plaintext.dropFirst(PathMessage.probeMinimum).allSatisfy({ $0 == 0 }) {
            precondition(out.prefix(length).elementsEqual(plaintext), "a zero-padded probe re-encodes to other bytes")
        }
    }
}

/// Counters from the input (each 3 bytes: a step back or forward of up to 2^23, so that the window's
/// edges and long jumps both come up), through `ReplayWindow` and a model: accepted once, never more
/// than `size` behind the newest, never at or past the limit.
private func replayWindow(_ input: UnsafeRawBufferPointer) {
    var window = ReplayWindow()
    var accepted = Set<UInt64>()
    var newest: UInt64?
    var counter: UInt64 = input.count > 8 ? ReplayWindow.counterLimit - 20_000 * UInt64(input[0] & 1) : 0
    var i = 0
    while i + 3 <= input.count {
        let step = Int64(input[i]) << 16 | Int64(input[i + 1]) << 8 | Int64(input[i + 2])
        let signed = step - (1 << 23)
        counter = signed < 0 ? counter &- UInt64(-signed) : counter &+ UInt64(signed)
        i += 3
        let expected: Bool
        if counter >= ReplayWindow.counterLimit || accepted.contains(counter) {
            expected = false
        } else if let newest, counter <= newest {
            expected = newest - counter <= ReplayWindow.size
        } else {
            expected = true
        }
        precondition(window.wouldAccept(counter) == expected, "wouldAccept(\(counter)) disagrees with the model")
        precondition(window.accept(counter) == expected, "accept(\(counter)) disagrees with the model")
        if expected {
            accepted.insert(counter)
            newest = max(newest ?? 0, counter)
        }
    }
}
