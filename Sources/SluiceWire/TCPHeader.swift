/// The fields of a TCP header as plain values: parse one out of a `TCPSegment`, or fill one in and
/// `emit` it. Of the options only MSS and window scale are kept; emitted options are padded with
/// no-operation bytes to a 4-byte boundary.
public struct TCPHeader: Hashable, Sendable {
    public var sourcePort: UInt16
    public var destinationPort: UInt16
    public var sequenceNumber: UInt32
    public var acknowledgmentNumber: UInt32
    public var flags: TCPFlags
    public var window: UInt16
    public var urgentPointer: UInt16
    public var maximumSegmentSize: UInt16?
    public var windowScale: UInt8?

    public init(
        sourcePort: UInt16, destinationPort: UInt16, sequenceNumber: UInt32, acknowledgmentNumber: UInt32,
        flags: TCPFlags, window: UInt16, urgentPointer: UInt16 = 0,
        maximumSegmentSize: UInt16? = nil, windowScale: UInt8? = nil
    ) {
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        self.sequenceNumber = sequenceNumber
        self.acknowledgmentNumber = acknowledgmentNumber
        self.flags = flags
        self.window = window
        self.urgentPointer = urgentPointer
        self.maximumSegmentSize = maximumSegmentSize
        self.windowScale = windowScale
    }

    /// The header of `segment`, with its MSS and window scale options.
    public init(_ segment: TCPSegment) {
        self.init(
            sourcePort: segment.sourcePort, destinationPort: segment.destinationPort,
            sequenceNumber: segment.sequenceNumber, acknowledgmentNumber: segment.acknowledgmentNumber,
            flags: segment.flags, window: segment.window, urgentPointer: segment.urgentPointer,
            maximumSegmentSize: segment.maximumSegmentSize, windowScale: segment.windowScale)
    }

    /// The emitted header's length: 20, plus 4 for MSS, plus 4 for window scale (with one NOP).
    public var length: Int {
        TCPSegment.minimumHeaderLength + (maximumSegmentSize == nil ? 0 : 4) + (windowScale == nil ? 0 : 4)
    }

    /// Writes the header at the start of `segment` and fills in the checksum over all of `segment`.
    ///
    /// `segment` is the whole TCP segment: `length` header bytes, then the payload, which must already
    /// be in place. Traps if `segment` is shorter than `length`, the addresses differ in family, or the
    /// segment exceeds 65535 bytes: all are caller bugs.
    public func emit(into segment: UnsafeMutableRawBufferPointer, source: IPAddress, destination: IPAddress) {
        let headerLength = length
        precondition(segment.count >= headerLength, "buffer too small for the TCP header")
        precondition(segment.count <= 0xFFFF, "TCP segment longer than 65535 bytes")
        precondition(source.isIPv4 == destination.isIPv4, "pseudo-header addresses of different families")
        segment.writeU16(sourcePort, at: 0)
        segment.writeU16(destinationPort, at: 2)
        segment.writeU32(sequenceNumber, at: 4)
        segment.writeU32(acknowledgmentNumber, at: 8)
        segment[12] = UInt8(headerLength / 4) << 4
        segment[13] = flags.rawValue
        segment.writeU16(window, at: 14)
        segment.writeU16(0, at: 16)
        segment.writeU16(urgentPointer, at: 18)
        var at = TCPSegment.minimumHeaderLength
        if let mss = maximumSegmentSize {
            segment[at] = 2
            segment[at + 1] = 4
            segment.writeU16(mss, at: at + 2)
            at += 4
        }
        if let shift = windowScale {
            segment[at] = 1
            segment[at + 1] = 3
            segment[at + 2] = 3
            segment[at + 3] = shift
            at += 4
        }
        let pseudo = Checksum.pseudoHeaderSum(
            source: source, destination: destination, protocol: .tcp, length: segment.count)
        segment.writeU16(Checksum.checksum(UnsafeRawBufferPointer(segment), pseudoHeaderSum: pseudo), at: 16)
    }
}
