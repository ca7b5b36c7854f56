/// The type byte of a frame (docs/protocol.md §3).
public enum FrameType: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case open = 0x01
    case openOK = 0x02
    case data = 0x03
    case credit = 0x04
    case fin = 0x05
    case reset = 0x06
    case ping = 0x07
    case pong = 0x08
    case goAway = 0x09
    case datagram = 0x0A
    case datagramError = 0x0B
    case hello = 0x0C
    case udpPath = 0x0D
    case udpPathUse = 0x0E

    /// PING, PONG, GO_AWAY, HELLO, UDP_PATH and UDP_PATH_USE concern the carrier and travel on
    /// stream 0; all others on a stream.
    public var isCarrierFrame: Bool {
        switch self {
        case .ping, .pong, .goAway, .hello, .udpPath, .udpPathUse: return true
        default: return false
        }
    }

    /// The name used in docs/protocol.md.
    public var description: String {
        switch self {
        case .open: return "OPEN"
        case .openOK: return "OPEN_OK"
        case .data: return "DATA"
        case .credit: return "CREDIT"
        case .fin: return "FIN"
        case .reset: return "RESET"
        case .ping: return "PING"
        case .pong: return "PONG"
        case .goAway: return "GO_AWAY"
        case .datagram: return "DATAGRAM"
        case .datagramError: return "DATAGRAM_ERROR"
        case .hello: return "HELLO"
        case .udpPath: return "UDP_PATH"
        case .udpPathUse: return "UDP_PATH_USE"
        }
    }
}
