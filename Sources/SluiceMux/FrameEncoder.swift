import SluiceWire

/// Appends frames to a caller-owned buffer: the plaintext area of one record.
///
/// The encoder owns nothing and allocates nothing; it writes at `count` and moves it on. The usable
/// space is the buffer, capped at `Frame.maximumRecordPlaintext`. When a frame does not fit, the
/// append returns `false` and writes nothing: seal the record and start the next one.
///
/// DATAGRAM frames are appended with `appendDatagram(stream:endpoint:payload:)`, which splits a
/// datagram across records when it must, or one at a time with `appendDatagramFrame`.
///
/// DATA has two forms. `appendData(stream:payload:)` copies bytes that are already in memory. For
/// bytes still in a socket, `dataPayloadSpace()` hands out the room after a DATA header so that
/// `read(2)` can fill it in place, and `commitData(stream:count:)` then writes the header in front.
///
/// Loop-confined like the buffer it writes to.
public struct FrameEncoder {
    /// The record plaintext area being filled.
    public let buffer: UnsafeMutableRawBufferPointer
    /// Bytes written so far, from the start of `buffer`.
    public private(set) var count = 0

    /// The largest DATA payload: a frame header and it fill a maximal record (65519 − 7).
    public static let maximumDataPayload = Frame.maximumRecordPlaintext - Frame.headerLength

    /// Encodes into `buffer`, from its start; at most `Frame.maximumRecordPlaintext` bytes of it are
    /// used.
    public init(_ buffer: UnsafeMutableRawBufferPointer) {
        self.buffer = UnsafeMutableRawBufferPointer(
            rebasing: buffer[0..<min(buffer.count, Frame.maximumRecordPlaintext)])
    }

    /// Bytes still free.
    public var remaining: Int { buffer.count - count }

    /// The frames written so far.
    public var encoded: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0..<count]) }

    /// Forgets everything written, to fill the buffer again.
    public mutating func removeAll() { count = 0 }

    /// Appends a control frame. Returns `false`, writing nothing, if it does not fit.
    ///
    /// Throws `.badDomain` for an OPEN whose domain `Destination.isValidDomain` rejects, and
    /// `.badStream` for a carrier frame off stream 0 or a stream frame on stream 0. A RESET message
    /// longer than 200 bytes is cut at a character boundary.
    public mutating func append(_ frame: Frame) throws(FrameError) -> Bool {
        if frame.type.isCarrierFrame != (frame.stream == 0) { throw .badStream(frame.type, frame.stream) }
        if case .open(_, _, _, let destination) = frame, case .domain(let name) = destination.host,
            !Destination.isValidDomain(name)
        {
            throw .badDomain
        }
        let payloadLength = frame.payloadLength
        guard Frame.headerLength + payloadLength <= remaining else { return false }
        writeHeader(frame.type, stream: frame.stream, length: payloadLength)
        let at = count + Frame.headerLength
        switch frame {
        case .open(_, let window, let proto, let destination):
            buffer.writeU32(window, at: at)
            buffer[at + 4] = proto.rawValue
            _ = try destination.encode(into: buffer, at: at + 5)
        case .openOK(_, let window):
            buffer.writeU32(window, at: at)
        case .credit(_, let increment):
            buffer.writeU32(increment, at: at)
        case .fin:
            break
        case .reset(_, let reason, var message):
            buffer[at] = reason.rawValue
            // One copy from the string's contiguous UTF-8: walking `utf8` byte by byte cost ~2,000
            // instructions per RESET, and a relay at its UDP mapping cap sends one per new mapping
            // (callgrind on the relay under `Benchmarks/e2e/reqcpu.py --test udp-new`).
            let length = payloadLength - 1
            message.withUTF8 { utf8 in
                UnsafeMutableRawBufferPointer(rebasing: buffer[at + 1..<at + 1 + length])
                    .copyMemory(from: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[0..<length])))
            }
        case .ping(let opaque), .pong(let opaque):
            buffer.writeU64(opaque, at: at)
        case .goAway(let reason):
            buffer[at] = reason.rawValue
        case .hello(let features):
            buffer.writeU32(features.rawValue, at: at)
        case .udpPath(let index):
            buffer.writeU32(index, at: at)
        case .udpPathUse(let use):
            buffer[at] = use ? 1 : 0
        case .datagramError(_, let code, let mtu, let endpoint):
            buffer[at] = code.rawValue
            buffer.writeU16(mtu, at: at + 1)
            _ = FrameEndpoint.encode(endpoint, into: buffer, at: at + 3)
        }
        count = at + payloadLength
        return true
    }

    /// Appends a DATA frame carrying a copy of `payload`. Returns `false`, writing nothing, if it
    /// does not fit.
    ///
    /// Traps if `stream` is 0 or `payload` is empty or longer than `maximumDataPayload`: the caller
    /// splits (`min(remaining - Frame.headerLength, maximumDataPayload)` always fits).
    public mutating func appendData(stream: UInt32, payload: UnsafeRawBufferPointer) -> Bool {
        precondition(stream != 0, "DATA on stream 0")
        precondition(!payload.isEmpty && payload.count <= FrameEncoder.maximumDataPayload, "DATA payload size out of range")
        guard Frame.headerLength + payload.count <= remaining else { return false }
        writeHeader(.data, stream: stream, length: payload.count)
        let at = count + Frame.headerLength
        UnsafeMutableRawBufferPointer(rebasing: buffer[at..<at + payload.count]).copyMemory(from: payload)
        count = at + payload.count
        return true
    }

    /// The room for a DATA payload after a header yet to be written: up to `maximumDataPayload`
    /// bytes, empty if not even a one-byte DATA frame fits. Fill a prefix of it, then call
    /// `commitData(stream:count:)`; appending anything else first discards it.
    public func dataPayloadSpace() -> UnsafeMutableRawBufferPointer {
        let start = count + Frame.headerLength
        guard start < buffer.count else { return UnsafeMutableRawBufferPointer(rebasing: buffer[count..<count]) }
        let end = min(buffer.count, start + FrameEncoder.maximumDataPayload)
        return UnsafeMutableRawBufferPointer(rebasing: buffer[start..<end])
    }

    /// Completes a DATA frame whose first `count` payload bytes were written into
    /// `dataPayloadSpace()`. Traps if `stream` is 0 or `count` is 0 or larger than that space.
    public mutating func commitData(stream: UInt32, count payloadCount: Int) {
        precondition(stream != 0, "DATA on stream 0")
        precondition(payloadCount > 0 && payloadCount <= dataPayloadSpace().count, "DATA payload size out of range")
        writeHeader(.data, stream: stream, length: payloadCount)
        count += Frame.headerLength + payloadCount
    }

    /// The largest datagram carried (docs/protocol.md §6).
    public static let maximumDatagram = 0xFFFF

    /// Bytes a DATAGRAM frame takes besides its data: frame header, flags and, on a datagram's first
    /// frame, the endpoint (7 for IPv4, 19 for IPv6).
    public static func datagramOverhead(endpoint: SocketEndpoint?) -> Int {
        Frame.headerLength + 1 + (endpoint.map(FrameEndpoint.encodedLength) ?? 0)
    }

    /// Appends one DATAGRAM frame (docs/protocol.md §6) carrying a copy of as much of `payload` as
    /// fits, and returns how many bytes it took; `nil`, writing nothing, if the frame does not fit
    /// with at least one byte of data (with none, for an empty datagram).
    ///
    /// Pass the destination (client) or source (relay) `endpoint` for a datagram's first frame, and
    /// `nil` with the rest of the payload for the frames that continue it. The frame sets MORE when
    /// it takes less than all of `payload`, so one datagram goes out as:
    ///
    /// ```
    /// var rest = datagram, endpoint: SocketEndpoint? = destination
    /// while true {
    ///     guard let n = encoder.appendDatagram(stream: id, endpoint: endpoint, payload: rest) else {
    ///         sealRecord(); continue      // an empty record always takes a frame
    ///     }
    ///     if n == rest.count { break }    // MORE was clear: the datagram is out
    ///     rest = UnsafeRawBufferPointer(rebasing: rest[n...]); endpoint = nil; sealRecord()
    /// }
    /// ```
    ///
    /// Traps if `stream` is 0, if a first frame's `payload` is longer than `maximumDatagram`, or if a
    /// continuing frame's `payload` is empty: caller bugs.
    public mutating func appendDatagram(stream: UInt32, endpoint: SocketEndpoint?, payload: UnsafeRawBufferPointer) -> Int? {
        precondition(endpoint == nil || payload.count <= FrameEncoder.maximumDatagram, "datagram longer than 65535 bytes")
        let overhead = FrameEncoder.datagramOverhead(endpoint: endpoint)
        guard remaining - overhead >= min(1, payload.count) else { return nil }
        let taken = min(remaining - overhead, payload.count)
        let piece = UnsafeRawBufferPointer(rebasing: payload[0..<taken])
        let appended = appendDatagramFrame(stream: stream, more: taken < payload.count, endpoint: endpoint, payload: piece)
        assert(appended, "room was checked")
        return taken
    }

    /// Appends one DATAGRAM frame exactly as given: flags MORE as `more` says, ENDPOINT and the
    /// endpoint if `endpoint` is set, then a copy of `payload`. Returns `false`, writing nothing, if it
    /// does not fit. `appendDatagram(stream:endpoint:payload:)` is the usual way in; this one is for a
    /// caller that already cut the datagram (and for re-encoding what was decoded).
    ///
    /// Traps if `stream` is 0 or `payload` is empty in any frame but a whole datagram's only one
    /// (`endpoint` set, `more` false): caller bugs, the frame would not decode.
    public mutating func appendDatagramFrame(stream: UInt32, more: Bool, endpoint: SocketEndpoint?, payload: UnsafeRawBufferPointer) -> Bool {
        precondition(stream != 0, "DATAGRAM on stream 0")
        precondition(!payload.isEmpty || (endpoint != nil && !more), "a DATAGRAM frame without data that is not a whole empty datagram")
        let overhead = FrameEncoder.datagramOverhead(endpoint: endpoint)
        guard overhead + payload.count <= remaining else { return false }
        writeHeader(.datagram, stream: stream, length: overhead - Frame.headerLength + payload.count)
        var at = count + Frame.headerLength
        buffer[at] = (more ? DatagramFlags.more : 0) | (endpoint == nil ? 0 : DatagramFlags.endpoint)
        at += 1
        if let endpoint { at = FrameEndpoint.encode(endpoint, into: buffer, at: at) }
        UnsafeMutableRawBufferPointer(rebasing: buffer[at..<at + payload.count]).copyMemory(from: payload)
        count = at + payload.count
        return true
    }

    private func writeHeader(_ type: FrameType, stream: UInt32, length: Int) {
        buffer[count] = type.rawValue
        buffer.writeU32(stream, at: count + 1)
        buffer.writeU16(UInt16(length), at: count + 5)
    }
}

/// The DATAGRAM frame's flag bits (docs/protocol.md §3); the others must be 0.
enum DatagramFlags {
    /// More pieces of this datagram follow in the next DATAGRAM frames of the association.
    static let more: UInt8 = 0x01
    /// This is a datagram's first frame: the endpoint follows the flags.
    static let endpoint: UInt8 = 0x02
}
