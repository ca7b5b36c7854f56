// libFuzzer entry point for the SluiceMux frame decoder. Compiled with Sources/SluiceMux/*.swift
// against a SluiceWire module built first (see Fuzz/README.md).
//
// Beyond "never traps": every record that decodes re-encodes to the same frames, and to the very same
// bytes unless a RESET message held invalid UTF-8 (which the decoder repairs, and the repaired text
// may be longer than the 200 bytes the encoder sends).
import SluiceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func frameFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size <= Frame.maximumRecordPlaintext else { return 0 }  // no record is longer
    let plaintext = UnsafeRawBufferPointer(start: data, count: size)
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
