/// The question of a DNS query (RFC 1035 §4.1.2): the name asked for, its type and class.
///
/// Split DNS needs only this from a query that enters the TUN, to tell whether the name lies in a
/// `--dns-domain`; the rest of the message is passed on as it came. `init(parsingQuery:)` is a checked
/// parse over bytes it does not own (a UDP payload, or a TCP message after its two length bytes); it
/// follows compression pointers, which RFC 1035 §4.1.4 allows anywhere a name is, but only to bytes
/// before the piece of name that holds the pointer (where every compressor points: to names written
/// earlier), so a message cannot make it loop.
public struct DNSQuestion: Hashable, Sendable {
    /// Size of the DNS header: ID, flags, and the four section counts.
    public static let headerLength = 12

    public var name: DNSName
    /// QTYPE: 1 A, 28 AAAA, 33 SRV...
    public var type: UInt16
    /// QCLASS: 1 IN.
    public var qclass: UInt16

    public init(name: DNSName, type: UInt16, qclass: UInt16 = 1) {
        self.name = name
        self.type = type
        self.qclass = qclass
    }

    /// The first question of the query `message`. Throws `.truncated(.dns)` when the message ends
    /// before the header, the name or the question's type and class do, and `.badDNS` when it is a
    /// response, has no question, or its name is malformed (see `DNSProblem`).
    public init(parsingQuery message: UnsafeRawBufferPointer) throws(WireError) {
        guard message.count >= Self.headerLength else { throw .truncated(.dns) }
        guard message[2] & 0x80 == 0 else { throw .badDNS(.notAQuery) }
        guard message.readU16(at: 4) > 0 else { throw .badDNS(.noQuestion) }
        let (name, end) = try Self.parseName(in: message, at: Self.headerLength)
        guard message.count - end >= 4 else { throw .truncated(.dns) }
        self.init(name: name, type: message.readU16(at: end), qclass: message.readU16(at: end + 2))
    }

    /// The name that starts at `start`, and the offset just past it where it starts (after its zero
    /// byte, or after its first compression pointer).
    static func parseName(in message: UnsafeRawBufferPointer, at start: Int) throws(WireError) -> (DNSName, Int) {
        var labels: [[UInt8]] = []
        var position = start
        // Where the piece of the name being read begins; every pointer must lead before it, so the
        // pieces start ever earlier and the walk ends.
        var pieceStart = start
        var end: Int?
        var wireLength = 1
        while true {
            guard position < message.count else { throw .truncated(.dns) }
            let length = Int(message[position])
            switch length >> 6 {
            case 0:
                if length == 0 {
                    return (DNSName(checkedLabels: labels), end ?? position + 1)
                }
                guard message.count - position - 1 >= length else { throw .truncated(.dns) }
                wireLength += 1 + length
                guard wireLength <= DNSName.maxWireLength else { throw .badDNS(.nameTooLong) }
                labels.append(Array(message.slice((position + 1)..<(position + 1 + length))))
                position += 1 + length
            case 3:
                guard message.count - position >= 2 else { throw .truncated(.dns) }
                let target = Int(message.readU16(at: position) & 0x3fff)
                guard target < pieceStart else { throw .badDNS(.pointerNotBackwards(from: position, to: target)) }
                if end == nil { end = position + 2 }
                position = target
                pieceStart = target
            default:
                throw .badDNS(.unknownLabelType(UInt8(length)))
            }
        }
    }

    /// A query message with this question: header with `id`, recursion desired, one question. For
    /// tests and fixtures; Sluice itself never builds queries.
    public func queryMessage(id: UInt16) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        bytes += name.wireBytes
        bytes += [UInt8(type >> 8), UInt8(type & 0xff), UInt8(qclass >> 8), UInt8(qclass & 0xff)]
        return bytes
    }
}

/// What makes a DNS message unusable as a query (`WireError.badDNS`).
public enum DNSProblem: Hashable, Sendable, CustomStringConvertible {
    /// The QR bit is set: the message is a response.
    case notAQuery
    /// QDCOUNT is zero.
    case noQuestion
    /// The name is longer than 255 bytes on the wire.
    case nameTooLong
    /// A compression pointer at `from` points to `to`, which is not before the piece of the name that
    /// holds the pointer (it would loop, or point to bytes not yet written).
    case pointerNotBackwards(from: Int, to: Int)
    /// A length byte whose top bits are 01 or 10 (the extended label types RFC 6891 retired).
    case unknownLabelType(UInt8)

    public var description: String {
        switch self {
        case .notAQuery: return "it is a response (QR set), not a query"
        case .noQuestion: return "it has no question (QDCOUNT 0)"
        case .nameTooLong: return "the name is longer than 255 bytes"
        case .pointerNotBackwards(let from, let to): return "the compression pointer at byte \(from) points to byte \(to), not to an earlier name"
        case .unknownLabelType(let byte): return "unknown label type 0x\(String(byte, radix: 16))"
        }
    }
}
