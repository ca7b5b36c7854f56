/// One TCP option (RFC 9293 §3.2, RFC 7323, RFC 2018). No-operation padding is skipped by the walk.
public enum TCPOption: Hashable, Sendable {
    /// Kind 2: the largest segment the sender will receive.
    case maximumSegmentSize(UInt16)
    /// Kind 3: the window scale shift count.
    case windowScale(UInt8)
    /// Kind 4: selective acknowledgments are permitted.
    case sackPermitted
    /// Kind 8: timestamp value and echo reply.
    case timestamps(value: UInt32, echoReply: UInt32)
    /// Any other kind, with its total length (kind and length bytes included).
    case unknown(kind: UInt8, length: Int)
}

/// The options of a TCP header, walked in order without allocating.
///
/// The walk stops at end-of-list, at the end of the bytes, or at the first malformed option (a
/// length below 2, past the end, or wrong for its kind); `isMalformed` then says which it was.
public struct TCPOptions: Sequence, IteratorProtocol {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0
    /// Set once the walk has stopped at a malformed option.
    public private(set) var isMalformed = false

    /// Walks `bytes`, the options area of a header.
    public init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    public mutating func next() -> TCPOption? {
        while offset < bytes.count {
            let kind = bytes[offset]
            switch kind {
            case 0:  // end of option list
                offset = bytes.count
                return nil
            case 1:  // no-operation
                offset += 1
                continue
            default:
                break
            }
            guard bytes.count - offset >= 2 else { return malformed() }
            let length = Int(bytes[offset + 1])
            guard length >= 2, length <= bytes.count - offset else { return malformed() }
            let at = offset
            offset += length
            switch (kind, length) {
            case (2, 4): return .maximumSegmentSize(bytes.readU16(at: at + 2))
            case (3, 3): return .windowScale(bytes[at + 2])
            case (4, 2): return .sackPermitted
            case (8, 10): return .timestamps(value: bytes.readU32(at: at + 2), echoReply: bytes.readU32(at: at + 6))
            case (2, _), (3, _), (4, _), (8, _): return malformed()
            default: return .unknown(kind: kind, length: length)
            }
        }
        return nil
    }

    private mutating func malformed() -> TCPOption? {
        isMalformed = true
        offset = bytes.count
        return nil
    }
}
