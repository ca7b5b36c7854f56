/// Why a record's plaintext is not a valid sequence of frames (docs/protocol.md §3).
///
/// Any of these means the peer is broken, not one stream: the carrier answers with GO_AWAY(5) and
/// closes. Each renders as a sentence fit for a log line.
public enum FrameError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The record ends inside a frame's header or payload; frames never span records.
    case truncated
    /// A frame type this version does not know.
    case unknownType(UInt8)
    /// A frame whose length does not fit its type (for example a PING that is not 8 bytes, an empty
    /// DATA, an OPEN whose address does not end where the frame does).
    case badLength(FrameType, Int)
    /// An OPEN address type other than 1 (IPv4), 4 (IPv6) or 3 (domain); for the endpoint of a
    /// DATAGRAM or DATAGRAM_ERROR, other than 1 or 4.
    case badAddressType(UInt8)
    /// A domain name of length 0, or with a byte other than a letter, digit, `-`, `.` or `_`; when
    /// encoding, also a name longer than 255 bytes.
    case badDomain
    /// A RESET or GO_AWAY reason this version does not know.
    case badReason(UInt8)
    /// A carrier frame (PING, PONG, GO_AWAY, HELLO, UDP_PATH, UDP_PATH_USE) on a stream other than 0, or a stream frame on stream 0.
    case badStream(FrameType, UInt32)
    /// A DATAGRAM whose flags set a bit other than MORE (bit 0) and ENDPOINT (bit 1).
    case badDatagramFlags(UInt8)
    /// A DATAGRAM_ERROR code other than 1 (port unreachable), 2 (unreachable), 3 (too big) or 4
    /// (forbidden).
    case badDatagramErrorCode(UInt8)
    /// A UDP_PATH whose index is 0, which no path has.
    case badPathIndex
    /// A UDP_PATH_USE whose flag is neither 0 nor 1.
    case badPathUse(UInt8)

    public var description: String {
        switch self {
        case .truncated:
            return "truncated frame: the record ends inside a frame"
        case .unknownType(let t):
            return "unknown frame type \(t)"
        case .badLength(let type, let n):
            return "\(type) frame with a payload of \(n) bytes, which does not fit its type"
        case .badAddressType(let t):
            return "unknown address type \(t): expected 1 (IPv4), 4 (IPv6) or, in OPEN only, 3 (domain)"
        case .badDomain:
            return "OPEN with a bad domain name: 1 to 255 letters, digits, '-', '.' or '_' expected"
        case .badReason(let r):
            return "unknown reset reason \(r)"
        case .badStream(let type, let id):
            return "\(type) frame on stream \(id): "
                + (type.isCarrierFrame ? "carrier frames belong on stream 0" : "stream 0 is the carrier itself")
        case .badDatagramFlags(let flags):
            return "DATAGRAM with flags \(flags): only bits 0 (MORE) and 1 (ENDPOINT) are defined"
        case .badDatagramErrorCode(let code):
            return "DATAGRAM_ERROR with unknown code \(code): expected 1, 2, 3 or 4"
        case .badPathIndex:
            return "UDP_PATH with index 0, which no path has"
        case .badPathUse(let flag):
            return "UDP_PATH_USE with flag \(flag): expected 0 or 1"
        }
    }
}
