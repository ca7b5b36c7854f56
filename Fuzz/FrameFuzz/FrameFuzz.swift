// libFuzzer entry point for the SluiceMux frame decoder, against SluiceMux and SluiceWire built with
// -enable-testing (see Fuzz/README.md).
//
// Beyond "never traps": every record that decodes re-encodes to the same frames, and to the very same
// bytes unless a RESET message held invalid UTF-8 (which the decoder repairs, and the repaired text
// may be longer than the 200 bytes the encoder sends). And the input, taken as one datagram, goes
// through `appendDatagram` into records of a size its first byte picks and comes back whole.
@testable import SluiceMux
@testable import SluiceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func frameFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size <= Frame.maximumRecordPlaintext else { return 0 }  // no record is longer
    let plaintext = UnsafeRawBufferPointer(start: data, count: size)
    splitDatagram(plaintext)
    var decoder = FrameDecoder(plaintext)
    var frames: [DecodedFrame] = []
    do {
        while let frame = try decoder.next() { frames.append(frame) }
    } catch {
        _ = error.description
        precondition((try? decoder.next()) == nil, "the decoder goes on after an error")
        return 0
    }
    let out = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1) * 2 + 64, alignment: 8)
    defer { out.deallocate() }
    var encoder = FrameEncoder(out)
    var repaired = false
    for frame in frames {
        switch frame {
        case .data(let stream, let payload):
            precondition(encoder.appendData(stream: stream, payload: payload), "DATA does not fit on re-encode")
        case .datagram(let stream, let more, let endpoint, let payload):
            precondition(
                encoder.appendDatagramFrame(stream: stream, more: more, endpoint: endpoint, payload: payload),
                "DATAGRAM does not fit on re-encode")
        case .control(let control):
            if case .reset(_, _, let message) = control, message.unicodeScalars.contains("\u{FFFD}") { repaired = true }
            precondition((try? encoder.append(control)) == true, "\(control) does not re-encode")
        }
    }
    if !repaired {
        precondition(encoder.encoded.elementsEqual(plaintext), "re-encoding changed the bytes")
    }
    var again = FrameDecoder(encoder.encoded)
    for frame in frames {
        guard let next = try? again.next() else { preconditionFailure("re-encoded record does not decode") }
        switch (frame, next) {
        case (.data(let s1, let p1), .data(let s2, let p2)):
            precondition(s1 == s2 && p1.elementsEqual(p2), "DATA changed")
        case (.datagram(let s1, let m1, let e1, let p1), .datagram(let s2, let m2, let e2, let p2)):
            precondition(s1 == s2 && m1 == m2 && e1 == e2 && p1.elementsEqual(p2), "DATAGRAM changed")
        case (.control(.reset(let s1, let r1, let m1)), .control(.reset(let s2, let r2, _)))
        where m1.unicodeScalars.contains("\u{FFFD}"):
            // A repaired message may grow past 200 bytes (U+FFFD is 3 bytes) and be cut on re-encode.
            precondition(s1 == s2 && r1 == r2, "RESET changed")
        case (.control(let f1), .control(let f2)):
            precondition(f1 == f2, "\(f1) became \(f2)")
        default:
            preconditionFailure("frame kind changed")
        }
    }
    return 0
}

/// Treats the input as one datagram and sends it through `appendDatagram` in records whose size the
/// input's first byte picks; the pieces, decoded, must follow the §6 sequence rules and add up to it.
private func splitDatagram(_ datagram: UnsafeRawBufferPointer) {
    guard let first = datagram.first else { return }
    let capacity = 30 + Int(first) * 64
    let endpoint = SocketEndpoint(address: first & 1 == 0 ? .v4(0x0808_0808) : .v6(0x2001_0DB8 << 32, 1), port: 53)
    let record = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8)
    defer { record.deallocate() }
    var rest = datagram
    var next: SocketEndpoint? = endpoint
    var rebuilt: [UInt8] = []
    var frames = 0
    while true {
        var encoder = FrameEncoder(record)
        guard let taken = encoder.appendDatagram(stream: 1, endpoint: next, payload: rest) else {
            preconditionFailure("an empty \(capacity)-byte record took no DATAGRAM frame")
        }
        var decoder = FrameDecoder(encoder.encoded)
        guard case .datagram(1, let more, let decodedEndpoint, let payload)? = try? decoder.next(), decoder.isAtEnd else {
            preconditionFailure("a DATAGRAM frame does not decode alone")
        }
        precondition(decodedEndpoint == next && more == (taken < rest.count), "DATAGRAM flags")
        rebuilt += payload
        frames += 1
        if !more { break }
        rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
        next = nil
    }
    precondition(rebuilt.elementsEqual(datagram), "the pieces do not add up to the datagram")
    precondition(frames == 1 || !datagram.isEmpty, "an empty datagram in more than one frame")
}
