import SluiceWire

/// The plaintext of a UDP path packet once it authenticated (docs/protocol.md §8): what its
/// `PathHeader.Kind` says it holds. Decoding copies nothing: a datagram's data points into the
/// plaintext it came from.
///
/// ```
/// DATAGRAM                 stream u32 | addrType u8 (1 or 4) | address (4 or 16) | port u16 | data (0 or more)
/// PROBE, PROBE_REPLY       opaque u64 | padding (zero bytes, any number)
/// BUNDLE                   length u16 | DATAGRAM plaintext (length bytes), repeated to the end (once or more)
/// ```
public enum PathMessage {
    /// A datagram of association `stream`: to `endpoint` (client → relay) or from it (relay → client).
    case datagram(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer)
    /// A probe or its reply: `opaque` echoed, `length` the whole plaintext with its padding.
    case probe(opaque: UInt64, length: Int)
    /// Several datagrams, each checked already.
    case bundle(PathBundleEntries)

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
        case .bundle:
            return .bundle(try PathBundleEntries(checking: plaintext))
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

    /// Bytes a BUNDLE entry's length takes before its DATAGRAM plaintext.
    public static let bundleEntryPrefix = 2

    /// Writes a BUNDLE entry at the start of `buffer` — the DATAGRAM plaintext's length, then the
    /// plaintext — and returns its length; nil, writing nothing, when it does not fit.
    public static func encodeBundleEntry(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer,
                                         into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard buffer.count >= bundleEntryPrefix,
              let n = encodeDatagram(stream: stream, endpoint: endpoint, payload: payload,
                                     into: UnsafeMutableRawBufferPointer(rebasing: buffer[bundleEntryPrefix...])),
              n <= Int(UInt16.max) else { return nil }
        buffer.writeU16(UInt16(n), at: 0)
        return bundleEntryPrefix + n
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

/// The datagrams of a BUNDLE plaintext (docs/protocol.md §8), checked whole when made: every entry's
/// length lies within the plaintext, the entries fill it exactly, and each is a DATAGRAM plaintext
/// that decodes. So a receiver delivers all of a bundle's datagrams or, for one bad entry, none.
/// Iterating yields each datagram in order, its data pointing into the plaintext.
public struct PathBundleEntries: Sequence {
    public let plaintext: UnsafeRawBufferPointer
    /// How many datagrams it holds (at least one).
    public let count: Int

    /// Checks `plaintext` as a BUNDLE holds it.
    public init(checking plaintext: UnsafeRawBufferPointer) throws(PathPacketError) {
        var at = 0
        var count = 0
        while at < plaintext.count {
            guard plaintext.count - at >= PathMessage.bundleEntryPrefix else { throw .badBundle }
            let length = Int(plaintext.readU16(at: at))
            let start = at + PathMessage.bundleEntryPrefix
            guard length <= plaintext.count - start else { throw .badBundle }
            _ = try PathMessage.decode(.datagram, UnsafeRawBufferPointer(rebasing: plaintext[start..<start + length]))
            at = start + length
            count += 1
        }
        guard count > 0 else { throw .badBundle }
        self.plaintext = plaintext
        self.count = count
    }

    public struct Iterator: IteratorProtocol {
        let plaintext: UnsafeRawBufferPointer
        var at = 0

        public mutating func next() -> (stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer)? {
            guard plaintext.count - at >= PathMessage.bundleEntryPrefix else { return nil }
            let start = at + PathMessage.bundleEntryPrefix
            let end = start + Int(plaintext.readU16(at: at))
            at = end
            // Checked when the value was made: every entry decodes.
            guard end <= plaintext.count,
                  case .datagram(let stream, let endpoint, let payload)? =
                    try? PathMessage.decode(.datagram, UnsafeRawBufferPointer(rebasing: plaintext[start..<end])) else { return nil }
            return (stream, endpoint, payload)
        }
    }

    public func makeIterator() -> Iterator { Iterator(plaintext: plaintext) }
}
