import SluiceWire

/// The plaintext of a UDP path packet once it authenticated (docs/protocol.md §8): what its
/// `PathHeader.Kind` says it holds. Decoding copies nothing: a datagram's data points into the
/// plaintext it came from.
///
/// ```
/// DATAGRAM                 stream u32 | addrType u8 (1 or 4) | address (4 or 16) | port u16 | data (0 or more)
/// PROBE, PROBE_REPLY       opaque u64 | padding (zero bytes, any number)
/// ```
public enum PathMessage {
    /// A datagram of association `stream`: to `endpoint` (client → relay) or from it (relay → client).
    case datagram(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer)
    /// A probe or its reply: `opaque` echoed, `length` the whole plaintext with its padding.
    case probe(opaque: UInt64, length: Int)

    /// Bytes a DATAGRAM plaintext takes besides the data: stream id and endpoint (11 or 23).
    public static func datagramOverhead(endpoint: SocketEndpoint) -> Int { 4 + FrameEndpoint.encodedLength(endpoint) }

    /// Bytes of a probe's plaintext before its padding.
    public static let probeMinimum = 8

    /// Reads `plaintext` as a packet of `kind` holds it.
    public static func decode(_ kind: PathHeader.Kind, _ plaintext: UnsafeRawBufferPointer) throws(PathPacketError) -> PathMessage {
        switch kind {
        case .datagram:
            guard plaintext.count >= 4 + 7 else { throw .badDatagram }
            let stream = plaintext.readU32(at: 0)
            guard stream != 0 else { throw .badDatagram }
            let endpoint: SocketEndpoint, used: Int
            do {
                (endpoint, used) = try FrameEndpoint.decode(from: UnsafeRawBufferPointer(rebasing: plaintext[4...]))
            } catch .badAddressType(let type) {
                throw .badAddressType(type)
            } catch {
                throw .badDatagram
            }
            return .datagram(stream: stream, endpoint: endpoint, payload: UnsafeRawBufferPointer(rebasing: plaintext[(4 + used)...]))
        case .probe, .probeReply:
            guard plaintext.count >= probeMinimum else { throw .tooShort(PathHeader.length + plaintext.count + PathHeader.tagLength) }
            return .probe(opaque: plaintext.readU64(at: 0), length: plaintext.count)
        }
    }

    /// Writes a DATAGRAM plaintext at the start of `buffer` and returns its length; nil, writing
    /// nothing, when it does not fit.
    public static func encodeDatagram(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer,
                                      into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let total = datagramOverhead(endpoint: endpoint) + payload.count
        guard stream != 0, total <= buffer.count else { return nil }
        buffer.writeU32(stream, at: 0)
        let at = FrameEndpoint.encode(endpoint, into: buffer, at: 4)
        if !payload.isEmpty { UnsafeMutableRawBufferPointer(rebasing: buffer[at..<at + payload.count]).copyMemory(from: payload) }
        return total
    }

    /// Writes a probe plaintext of `length` bytes (at least `probeMinimum`): `opaque`, then zeros.
    /// Returns the length; nil when it does not fit or is too short.
    public static func encodeProbe(opaque: UInt64, length: Int, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard length >= probeMinimum, length <= buffer.count else { return nil }
        buffer.writeU64(opaque, at: 0)
        UnsafeMutableRawBufferPointer(rebasing: buffer[probeMinimum..<length]).initializeMemory(as: UInt8.self, repeating: 0)
        return length
    }
}
