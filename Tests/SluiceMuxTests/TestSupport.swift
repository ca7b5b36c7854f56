import SluiceTestSupport
import SluiceWire
import XCTest

@testable import SluiceMux

/// A control or DATA frame with DATA's payload copied out, so results can be compared after the
/// record buffer is gone.
enum Decoded: Equatable {
    case data(stream: UInt32, payload: [UInt8])
    case datagram(stream: UInt32, more: Bool, endpoint: SocketEndpoint?, payload: [UInt8])
    case control(Frame)

    init(_ frame: DecodedFrame) {
        switch frame {
        case .data(let stream, let payload): self = .data(stream: stream, payload: Array(payload))
        case .datagram(let stream, let more, let endpoint, let payload):
            self = .datagram(stream: stream, more: more, endpoint: endpoint, payload: Array(payload))
        case .control(let frame): self = .control(frame)
        }
    }
}

/// Decodes every frame of `plaintext`; the error, if any, ends the list.
func decodeAll(_ plaintext: [UInt8]) -> (frames: [Decoded], error: FrameError?) {
    plaintext.withUnsafeBytes { buffer in
        var decoder = FrameDecoder(buffer)
        var frames: [Decoded] = []
        do {
            while let frame = try decoder.next() { frames.append(Decoded(frame)) }
            return (frames, nil)
        } catch {
            XCTAssertNil(try? decoder.next(), "the decoder goes on after an error")
            return (frames, error as? FrameError)
        }
    }
}

/// Encodes `frames` into a fresh record buffer of `capacity` bytes.
func encode(_ frames: [Frame], capacity: Int = Frame.maximumRecordPlaintext) throws -> [UInt8] {
    var storage = [UInt8](repeating: 0, count: capacity)
    let count = try storage.withUnsafeMutableBytes { buffer in
        var encoder = FrameEncoder(buffer)
        for frame in frames {
            guard try encoder.append(frame) else { throw FrameError.truncated }
        }
        return encoder.count
    }
    return Array(storage[0..<count])
}
