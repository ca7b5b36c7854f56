import SluiceWire

/// The clear header of a UDP path packet (docs/protocol.md §8), WireGuard's transport header with
/// Sluice's byte order:
///
/// ```
/// +---------+---------------+-----------+-------------+------------------------------+
/// | kind u8 | reserved (3)  | index u32 | counter u64 | ciphertext | tag (16)        |
/// +---------+---------------+-----------+-------------+------------------------------+
///  \________________ 16 bytes, the AEAD's additional data ______/
/// ```
///
/// `index` is the number the relay gave the carrier's path (UDP_PATH), the same both ways;
/// `counter` is the sender's packet number in its direction, the AEAD nonce and what the
/// receiver's `ReplayWindow` checks. The checked view is `init(parsing:)`; `emit(into:)` writes one.
public struct PathHeader: Hashable, Sendable {
    /// What the ciphertext holds.
    public enum Kind: UInt8, Hashable, Sendable, CustomStringConvertible {
        /// A datagram of an association: `stream` u32, endpoint, data (`PathMessage.datagram`).
        case datagram = 1
        /// Client → relay: `opaque` u64 and zero padding; answered by a probe reply of the same length.
        case probe = 2
        /// Relay → client: the probe's `opaque`, padded to the probe's length.
        case probeReply = 3
        /// Several datagrams of the carrier's associations, each a `length` u16 and a DATAGRAM
        /// plaintext (`PathMessage.bundle`); only where feature bit 2 is in effect.
        case bundle = 4

        public var description: String {
            switch self {
            case .datagram: return "DATAGRAM"
            case .probe: return "PROBE"
            case .probeReply: return "PROBE_REPLY"
            case .bundle: return "BUNDLE"
            }
        }
    }

    public var kind: Kind
    public var index: UInt32
    public var counter: UInt64

    /// Bytes of the header.
    public static let length = 16
    /// Where `index` starts in a packet (the relay steers packets among its workers by it).
    public static let indexOffset = 4
    /// Bytes of the AEAD tag after the ciphertext.
    public static let tagLength = 16
    /// The shortest packet any kind can be: header, a probe's 8-byte plaintext, tag.
    public static let minimumPacket = length + 8 + tagLength

    public init(kind: Kind, index: UInt32, counter: UInt64) {
        self.kind = kind
        self.index = index
        self.counter = counter
    }

    /// Reads the header of `packet`, checking what can be checked before any crypto: the length
    /// (at least `minimumPacket`), a known kind and zero reserved bytes.
    public init(parsing packet: UnsafeRawBufferPointer) throws(PathPacketError) {
        guard packet.count >= Self.minimumPacket else { throw .tooShort(packet.count) }
        guard let kind = Kind(rawValue: packet[0]) else { throw .unknownKind(packet[0]) }
        guard packet[1] == 0, packet[2] == 0, packet[3] == 0 else { throw .reservedBytesSet }
        self.kind = kind
        index = packet.readU32(at: Self.indexOffset)
        counter = packet.readU64(at: 8)
    }

    /// Writes the 16 bytes at the start of `buffer` (which has room).
    public func emit(into buffer: UnsafeMutableRawBufferPointer) {
        buffer[0] = kind.rawValue
        buffer[1] = 0
        buffer[2] = 0
        buffer[3] = 0
        buffer.writeU32(index, at: Self.indexOffset)
        buffer.writeU64(counter, at: 8)
    }
}

/// Why a UDP path packet was dropped before or after decryption. None is answered: the relay stays
/// as silent to a stray packet as to a stray TCP connection (docs/protocol.md §1, §8).
public enum PathPacketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Shorter than a header, the shortest plaintext and a tag.
    case tooShort(Int)
    /// A kind this version does not know.
    case unknownKind(UInt8)
    /// The three reserved header bytes are not zero.
    case reservedBytesSet
    /// A DATAGRAM plaintext shorter than its stream id and endpoint, or with stream 0.
    case badDatagram
    /// An endpoint address type other than 1 (IPv4) or 4 (IPv6).
    case badAddressType(UInt8)
    /// A BUNDLE whose entries do not add up to its plaintext: a length running past the end, or an
    /// entry shorter than a DATAGRAM's stream id and endpoint.
    case badBundle

    public var description: String {
        switch self {
        case .tooShort(let n): return "UDP path packet of \(n) bytes, shorter than the \(PathHeader.minimumPacket) any kind needs"
        case .unknownKind(let k): return "UDP path packet of unknown kind \(k)"
        case .reservedBytesSet: return "UDP path packet with reserved header bytes set"
        case .badDatagram: return "UDP path DATAGRAM without a stream id and endpoint, or on stream 0"
        case .badAddressType(let t): return "UDP path DATAGRAM with address type \(t): expected 1 (IPv4) or 4 (IPv6)"
        case .badBundle: return "UDP path BUNDLE whose entry lengths do not add up to its plaintext, or with an entry too short for a datagram"
        }
    }
}
