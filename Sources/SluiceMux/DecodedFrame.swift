import SluiceWire

/// One frame out of a record plaintext, as `FrameDecoder` yields it.
///
/// DATA and DATAGRAM are not copied: `payload` points into the plaintext buffer given to the decoder
/// and is valid only while that buffer is. Write it onward (to a socket, into the TCP stack) before
/// reusing the record buffer.
public enum DecodedFrame: CustomStringConvertible {
    case data(stream: UInt32, payload: UnsafeRawBufferPointer)
    /// A DATAGRAM frame (docs/protocol.md §6): a whole datagram, or one piece of it. `endpoint` is set
    /// on a datagram's first frame only (flag ENDPOINT); `more` says further pieces follow (flag MORE).
    case datagram(stream: UInt32, more: Bool, endpoint: SocketEndpoint?, payload: UnsafeRawBufferPointer)
    case control(Frame)

    public var type: FrameType {
        switch self {
        case .data: return .data
        case .datagram: return .datagram
        case .control(let frame): return frame.type
        }
    }

    public var stream: UInt32 {
        switch self {
        case .data(let stream, _), .datagram(let stream, _, _, _): return stream
        case .control(let frame): return frame.stream
        }
    }

    /// `DATA stream 5, 1400 bytes`, `DATAGRAM stream 3, 512 bytes, 8.8.8.8:53, more`, `RESET stream 7`,
    /// for logs.
    public var description: String {
        switch self {
        case .data(let stream, let payload): return "DATA stream \(stream), \(payload.count) bytes"
        case .datagram(let stream, let more, let endpoint, let payload):
            return "DATAGRAM stream \(stream), \(payload.count) bytes" + (endpoint.map { ", \($0)" } ?? "")
                + (more ? ", more" : "")
        case .control(let frame):
            return frame.type.isCarrierFrame ? "\(frame.type)" : "\(frame.type) stream \(frame.stream)"
        }
    }
}
