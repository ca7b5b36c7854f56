import SluiceWire

/// Reads the frames of one record plaintext, in order, without copying DATA.
///
/// ```
/// var decoder = FrameDecoder(plaintext)
/// while let frame = try decoder.next() {
///     switch frame {
///     case .data(let stream, let payload): ...      // payload points into `plaintext`
///     case .datagram(let stream, let more, let endpoint, let payload): ...
///     case .control(.credit(let stream, let n)): ...
///     ...
/// ```
///
/// Checks every frame's length against its type (docs/protocol.md §3), the stream rule (carrier
/// frames on stream 0 only, stream frames never on 0), reasons, codes, flags and addresses. It does
/// not know which streams exist, nor whether a DATAGRAM piece follows one with MORE set: that is the
/// session's job. After an error it yields nothing more; the
/// carrier is to be closed anyway.
public struct FrameDecoder {
    private let plaintext: UnsafeRawBufferPointer
    /// Where the next frame starts.
    public private(set) var offset = 0

    public init(_ plaintext: UnsafeRawBufferPointer) {
        self.plaintext = plaintext
    }

    /// True once every frame was read (or an error ended the walk).
    public var isAtEnd: Bool { offset >= plaintext.count }

    /// The next frame, or `nil` at the end of the plaintext.
    public mutating func next() throws(FrameError) -> DecodedFrame? {
        guard offset < plaintext.count else { return nil }
        do {
            return try decodeNext()
        } catch {
            offset = plaintext.count
            throw error
        }
    }

    private mutating func decodeNext() throws(FrameError) -> DecodedFrame {
        guard plaintext.count - offset >= Frame.headerLength else { throw .truncated }
        let typeByte = plaintext[offset]
        let stream = plaintext.readU32(at: offset + 1)
        let length = Int(plaintext.readU16(at: offset + 5))
        guard let type = FrameType(rawValue: typeByte) else { throw .unknownType(typeByte) }
        let start = offset + Frame.headerLength
        guard plaintext.count - start >= length else { throw .truncated }
        if type.isCarrierFrame != (stream == 0) { throw .badStream(type, stream) }
        let payload = UnsafeRawBufferPointer(rebasing: plaintext[start..<start + length])
        let frame: DecodedFrame
        switch type {
        case .data:
            guard length > 0 else { throw .badLength(type, length) }
            frame = .data(stream: stream, payload: payload)
        case .open:
            frame = .control(try Self.decodeOpen(stream: stream, payload))
        case .openOK:
            guard length == 4 else { throw .badLength(type, length) }
            frame = .control(.openOK(stream: stream, window: payload.readU32(at: 0)))
        case .credit:
            guard length == 4 else { throw .badLength(type, length) }
            frame = .control(.credit(stream: stream, increment: payload.readU32(at: 0)))
        case .fin:
            guard length == 0 else { throw .badLength(type, length) }
            frame = .control(.fin(stream: stream))
        case .reset:
            guard (1...1 + Frame.maximumResetMessage).contains(length) else { throw .badLength(type, length) }
            let reason = try Self.reason(payload[0])
            // The message is for logs only: invalid UTF-8 is repaired, not a protocol error.
            let message = String(decoding: UnsafeRawBufferPointer(rebasing: payload[1...]), as: UTF8.self)
            frame = .control(.reset(stream: stream, reason: reason, message: message))
        case .ping, .pong:
            guard length == 8 else { throw .badLength(type, length) }
            let opaque = payload.readU64(at: 0)
            frame = .control(type == .ping ? .ping(opaque) : .pong(opaque))
        case .goAway:
            guard length == 1 else { throw .badLength(type, length) }
            frame = .control(.goAway(try Self.reason(payload[0])))
        case .datagram:
            frame = try Self.decodeDatagram(stream: stream, payload)
        case .datagramError:
            frame = .control(try Self.decodeDatagramError(stream: stream, payload))
        case .hello:
            guard length == 4 else { throw .badLength(type, length) }
            frame = .control(.hello(CarrierFeatures(rawValue: payload.readU32(at: 0))))
        case .udpPath:
            guard length == 4 else { throw .badLength(type, length) }
            let index = payload.readU32(at: 0)
            guard index != 0 else { throw .badPathIndex }
            frame = .control(.udpPath(index: index))
        case .udpPathUse:
            guard length == 1 else { throw .badLength(type, length) }
            guard payload[0] <= 1 else { throw .badPathUse(payload[0]) }
            frame = .control(.udpPathUse(payload[0] == 1))
        }
        offset = start + length
        return frame
    }

    private static func reason(_ byte: UInt8) throws(FrameError) -> ResetReason {
        guard let reason = ResetReason(rawValue: byte) else { throw .badReason(byte) }
        return reason
    }

    /// `flags` u8 (MORE, ENDPOINT, no other bit), the endpoint if ENDPOINT is set, then the data: at
    /// least one byte, except in a whole datagram's only frame (ENDPOINT set, MORE clear).
    private static func decodeDatagram(stream: UInt32, _ payload: UnsafeRawBufferPointer) throws(FrameError) -> DecodedFrame {
        guard let flags = payload.first else { throw .badLength(.datagram, 0) }
        guard flags & ~(DatagramFlags.more | DatagramFlags.endpoint) == 0 else { throw .badDatagramFlags(flags) }
        let more = flags & DatagramFlags.more != 0
        var endpoint: SocketEndpoint? = nil
        var at = 1
        if flags & DatagramFlags.endpoint != 0 {
            do {
                let (decoded, used) = try FrameEndpoint.decode(from: UnsafeRawBufferPointer(rebasing: payload[1...]))
                endpoint = decoded
                at += used
            } catch .truncated {
                throw .badLength(.datagram, payload.count)
            }
        }
        if at == payload.count && (more || endpoint == nil) { throw .badLength(.datagram, payload.count) }
        return .datagram(stream: stream, more: more, endpoint: endpoint, payload: UnsafeRawBufferPointer(rebasing: payload[at...]))
    }

    /// `code` u8 (1...4), `mtu` u16, then an endpoint that must end exactly where the frame does.
    private static func decodeDatagramError(stream: UInt32, _ payload: UnsafeRawBufferPointer) throws(FrameError) -> Frame {
        guard payload.count >= 3 + 1 else { throw .badLength(.datagramError, payload.count) }
        guard let code = DatagramErrorCode(rawValue: payload[0]) else { throw .badDatagramErrorCode(payload[0]) }
        let endpoint: SocketEndpoint, used: Int
        do {
            (endpoint, used) = try FrameEndpoint.decode(from: UnsafeRawBufferPointer(rebasing: payload[3...]))
        } catch .truncated {
            throw .badLength(.datagramError, payload.count)
        }
        guard 3 + used == payload.count else { throw .badLength(.datagramError, payload.count) }
        return .datagramError(stream: stream, code: code, mtu: payload.readU16(at: 1), endpoint: endpoint)
    }

    /// `window` u32, `proto` u8, then a destination that must end exactly where the frame does.
    private static func decodeOpen(stream: UInt32, _ payload: UnsafeRawBufferPointer) throws(FrameError) -> Frame {
        guard payload.count >= 5 else { throw .badLength(.open, payload.count) }
        let destination: Destination, used: Int
        do {
            (destination, used) = try Destination.decode(from: UnsafeRawBufferPointer(rebasing: payload[5...]))
        } catch .truncated {
            throw .badLength(.open, payload.count)
        }
        guard 5 + used == payload.count else { throw .badLength(.open, payload.count) }
        return .open(
            stream: stream, window: payload.readU32(at: 0), proto: IPProtocol(rawValue: payload[4]),
            destination: destination)
    }
}
