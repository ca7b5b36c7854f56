/// One frame out of a record plaintext, as `FrameDecoder` yields it.
///
/// DATA is not copied: `payload` points into the plaintext buffer given to the decoder and is valid
/// only while that buffer is. Write it onward (to a socket, into the TCP stack) before reusing the
/// record buffer.
public enum DecodedFrame: CustomStringConvertible {
    case data(stream: UInt32, payload: UnsafeRawBufferPointer)
    case control(Frame)

    public var type: FrameType {
        switch self {
        case .data: return .data
        case .control(let frame): return frame.type
        }
    }

    public var stream: UInt32 {
        switch self {
        case .data(let stream, _): return stream
        case .control(let frame): return frame.stream
        }
    }

    /// `DATA stream 5, 1400 bytes`, `RESET stream 7`, for logs.
    public var description: String {
        switch self {
        case .data(let stream, let payload): return "DATA stream \(stream), \(payload.count) bytes"
        case .control(let frame):
            return frame.type.isCarrierFrame ? "\(frame.type)" : "\(frame.type) stream \(frame.stream)"
        }
    }
}
