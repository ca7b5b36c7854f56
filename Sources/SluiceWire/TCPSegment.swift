/// A checked view of a TCP segment (RFC 9293) over bytes it does not own: the IP payload.
///
/// `init(validating:)` checks the data offset against the segment once; the checksum needs the IP
/// pseudo-header and is checked only by `verifyChecksum(pseudoHeaderSum:)`.
///
/// The view is valid only while the memory it was made from is; it copies nothing.
public struct TCPSegment {
    /// The whole segment, header and payload.
    public let bytes: UnsafeRawBufferPointer

    /// The header without options.
    public static let minimumHeaderLength = 20

    /// Checks that `buffer` holds a TCP header whose data offset lies within it.
    public init(validating buffer: UnsafeRawBufferPointer) throws(WireError) {
        guard buffer.count >= TCPSegment.minimumHeaderLength else { throw .truncated(.tcp) }
        let headerLength = Int(buffer[12] >> 4) * 4
        guard headerLength >= TCPSegment.minimumHeaderLength, headerLength <= buffer.count else {
            throw .badHeaderLength(.tcp, headerLength)
        }
        bytes = buffer
    }

    public var sourcePort: UInt16 { bytes.readU16(at: 0) }
    public var destinationPort: UInt16 { bytes.readU16(at: 2) }
    public var sequenceNumber: UInt32 { bytes.readU32(at: 4) }
    public var acknowledgmentNumber: UInt32 { bytes.readU32(at: 8) }
    /// Header length in bytes, options included (20...60): the data offset field times 4.
    public var headerLength: Int { Int(bytes[12] >> 4) * 4 }
    public var flags: TCPFlags { TCPFlags(rawValue: bytes[13]) }
    public var window: UInt16 { bytes.readU16(at: 14) }
    public var checksum: UInt16 { bytes.readU16(at: 16) }
    public var urgentPointer: UInt16 { bytes.readU16(at: 18) }
    public var optionsRange: Range<Int> { TCPSegment.minimumHeaderLength..<headerLength }
    public var payloadRange: Range<Int> { headerLength..<bytes.count }
    public var payload: UnsafeRawBufferPointer { bytes.slice(payloadRange) }
    /// SEG.LEN: payload bytes plus one for SYN and one for FIN, the sequence space the segment uses.
    public var sequenceLength: Int {
        let f = flags
        return payloadRange.count + (f.contains(.syn) ? 1 : 0) + (f.contains(.fin) ? 1 : 0)
    }

    /// The options, walked lazily; the walk ends at end-of-list or at the first malformed option.
    public var options: TCPOptions { TCPOptions(bytes.slice(optionsRange)) }

    /// The MSS option's value, if present (and the options before it are well formed).
    public var maximumSegmentSize: UInt16? {
        for case .maximumSegmentSize(let mss) in options { return mss }
        return nil
    }

    /// The window scale option's shift count, if present.
    public var windowScale: UInt8? {
        for case .windowScale(let shift) in options { return shift }
        return nil
    }

    /// Whether the checksum verifies, given the IP layer's pseudo-header sum (`IPv4Packet`'s or
    /// `IPv6Packet`'s `pseudoHeaderSum`, or `Checksum.pseudoHeaderSum`).
    public func verifyChecksum(pseudoHeaderSum: UInt16) -> Bool {
        Checksum.verify(bytes, pseudoHeaderSum: pseudoHeaderSum)
    }

    /// Whether the checksum verifies for a segment sent from `source` to `destination`.
    public func verifyChecksum(source: IPAddress, destination: IPAddress) -> Bool {
        verifyChecksum(
            pseudoHeaderSum: Checksum.pseudoHeaderSum(
                source: source, destination: destination, protocol: .tcp, length: bytes.count))
    }
}
