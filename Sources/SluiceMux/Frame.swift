import SluiceWire

/// A control frame as a value (docs/protocol.md §3). DATA and DATAGRAM are not here: their payload
/// stays in the record buffer, see `DecodedFrame` and `FrameEncoder.appendData`/`appendDatagram`.
///
/// Every frame on the wire is a 7-byte header — `type` u8, `stream` u32, `length` u16 — and `length`
/// bytes of payload; a frame never spans records.
public enum Frame: Hashable, Sendable {
    /// Client → relay: open `stream` to `destination`; `window` is the client's receive window.
    case open(stream: UInt32, window: UInt32, proto: IPProtocol, destination: Destination)
    /// Relay → client: the stream is connected; `window` is the relay's receive window.
    case openOK(stream: UInt32, window: UInt32)
    /// The receiver consumed `increment` more bytes of the stream.
    case credit(stream: UInt32, increment: UInt32)
    /// The sender will send no more DATA on the stream (half-close).
    case fin(stream: UInt32)
    /// The stream is over. `message` is optional UTF-8 for logs; the encoder sends at most 200 bytes
    /// of it, cut at a character boundary.
    case reset(stream: UInt32, reason: ResetReason, message: String)
    /// Liveness probe on the carrier (stream 0).
    case ping(UInt64)
    /// Answer to a PING, echoing its value.
    case pong(UInt64)
    /// The sender opens and accepts no new streams; existing ones finish.
    case goAway(GoAwayReason)
    /// Relay → client: a datagram of the UDP association `stream` to `endpoint` failed (§6). `mtu`
    /// is the path MTU for `.tooBig` and 0 otherwise.
    case datagramError(stream: UInt32, code: DatagramErrorCode, mtu: UInt16, endpoint: SocketEndpoint)
    /// Client → relay, the carrier's first frame when the relay advertised features in handshake
    /// message 2: the client's feature bits (docs/protocol.md §1.1).
    case hello(CarrierFeatures)
    /// Relay → client, once, where the UDP path feature is in effect (docs/protocol.md §8): the
    /// relay's index for this carrier's UDP path (never 0).
    case udpPath(index: UInt32)
    /// Client → relay, after UDP_PATH: whether the relay is to send this carrier's datagrams on the
    /// UDP path (the client validated it) or on the carrier (it does not answer).
    case udpPathUse(Bool)

    /// The frame header's length: type, stream, length.
    public static let headerLength = 7
    /// The longest RESET message, in UTF-8 bytes.
    public static let maximumResetMessage = 200
    /// The largest record plaintext (docs/protocol.md §2); the frames of one record fit in it.
    public static let maximumRecordPlaintext = 65_519

    public var type: FrameType {
        switch self {
        case .open: return .open
        case .openOK: return .openOK
        case .credit: return .credit
        case .fin: return .fin
        case .reset: return .reset
        case .ping: return .ping
        case .pong: return .pong
        case .goAway: return .goAway
        case .datagramError: return .datagramError
        case .hello: return .hello
        case .udpPath: return .udpPath
        case .udpPathUse: return .udpPathUse
        }
    }

    /// The stream the frame belongs to; 0 for the carrier frames.
    public var stream: UInt32 {
        switch self {
        case .open(let s, _, _, _), .openOK(let s, _), .credit(let s, _), .fin(let s), .reset(let s, _, _),
            .datagramError(let s, _, _, _):
            return s
        case .ping, .pong, .goAway, .hello, .udpPath, .udpPathUse:
            return 0
        }
    }

    /// The payload's length as encoded.
    public var payloadLength: Int {
        switch self {
        case .open(_, _, _, let destination): return 4 + 1 + destination.encodedLength
        case .openOK, .credit, .hello, .udpPath: return 4
        case .udpPathUse: return 1
        case .fin: return 0
        case .reset(_, _, let message): return 1 + Frame.resetMessageLength(message)
        case .ping, .pong: return 8
        case .goAway: return 1
        case .datagramError(_, _, _, let endpoint): return 1 + 2 + FrameEndpoint.encodedLength(endpoint)
        }
    }

    /// Header plus payload.
    public var encodedLength: Int { Frame.headerLength + payloadLength }

    /// How many UTF-8 bytes of `message` a RESET carries: all of it up to 200 bytes, else the longest
    /// prefix of whole characters (Unicode scalars) within 200 bytes.
    static func resetMessageLength(_ message: String) -> Int {
        let count = message.utf8.count
        if count <= maximumResetMessage { return count }
        var length = 0
        for scalar in message.unicodeScalars {
            let next = length + UTF8.width(scalar)
            if next > maximumResetMessage { break }
            length = next
        }
        return length
    }
}
