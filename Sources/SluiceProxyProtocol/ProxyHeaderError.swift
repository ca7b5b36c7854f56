/// Why bytes are not a PROXY protocol header. Truncation is not an error (`ProxyHeader.decode`
/// returns nil). Each case means the connection did not come from a balancer speaking the protocol,
/// or came from one that speaks it wrongly: the relay closes it without a reply.
public enum ProxyHeaderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The first bytes are neither version 1's `PROXY ` nor version 2's signature.
    case notProxyProtocol
    /// Version 1: no CRLF within the 107 bytes a line may take.
    case lineTooLong
    /// Version 1: a line that does not follow the grammar; says which part.
    case badLine(String)
    /// Version 2: the high nibble of byte 13 is not 2.
    case badVersion(UInt8)
    /// Version 2: a command other than LOCAL (0) and PROXY (1).
    case badCommand(UInt8)
    /// Version 2: an address family above 3 (UNIX) or a transport above 2 (DGRAM).
    case badFamily(UInt8)
    /// Version 2: an address block shorter than its family needs.
    case addressesTooShort(family: UInt8, length: Int)
    /// Version 2: a header longer than `ProxyHeader.maximumLength`.
    case tooLong(Int)

    public var description: String {
        switch self {
        case .notProxyProtocol: return "no PROXY protocol header (neither \"PROXY \" nor the version 2 signature)"
        case .lineTooLong: return "a PROXY version 1 line without CRLF in its first 107 bytes"
        case .badLine(let what): return "a malformed PROXY version 1 line: \(what)"
        case .badVersion(let v): return "PROXY version 2 header with version \(v), expected 2"
        case .badCommand(let c): return "PROXY version 2 command \(c) (0 LOCAL, 1 PROXY)"
        case .badFamily(let f): return "PROXY version 2 family and transport byte 0x\(String(f, radix: 16)) (family 0-3, transport 0-2)"
        case .addressesTooShort(let f, let n): return "PROXY version 2 address block of \(n) bytes, too short for family and transport 0x\(String(f, radix: 16))"
        case .tooLong(let n): return "a PROXY version 2 header of \(n) bytes (Sluice reads at most \(ProxyHeader.maximumLength))"
        }
    }
}
