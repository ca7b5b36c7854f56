import SluiceCrypto
import SluiceMux

/// Building and taking back the UDP path's packets (docs/protocol.md §8) where they are sent from,
/// for both ends (the client's `UDPPathClient`, the relay's `RelayUDPPath`): they seal each packet
/// straight into their `DatagramBatch` and, should the kernel refuse its size when the batch goes
/// out, put its datagram on the carrier instead.
public enum PathPacket {
    /// Writes a packet of `kind` into `room`: the header, the plaintext `body` writes (it returns its
    /// length, or nil for no packet) and the tag, sealed with `sealer` under `counter`. Returns the
    /// packet's length, or nil when `body` wrote none.
    public static func seal(into room: UnsafeMutableRawBufferPointer, kind: PathHeader.Kind, index: UInt32, counter: UInt64,
                            sealer: PathCipher, body: (UnsafeMutableRawBufferPointer) -> Int?) -> Int? {
        let plaintext = UnsafeMutableRawBufferPointer(rebasing: room[PathHeader.length..<room.count - PathHeader.tagLength])
        guard let n = body(plaintext) else { return nil }
        PathHeader(kind: kind, index: index, counter: counter).emit(into: room)
        return sealer.seal(room, headerLength: PathHeader.length, plaintextLength: n, counter: counter)
    }

    /// What became of a packet the kernel refused to send for its size (EMSGSIZE: the path MTU fell).
    public enum Refused {
        /// It was a datagram and went on the carrier, as one too big for the path goes.
        case carried
        /// It was a datagram the carrier could not take either (budget full, association gone).
        case dropped
        /// It was a probe: nothing to carry.
        case probe
    }

    /// Takes back a packet this end sealed with `sealer` (the same key opens it) and puts its
    /// datagram on `session`'s carrier, so that a datagram the path accepted is not lost for a size
    /// the kernel learnt of only when the batch was sent.
    public static func carryRefused(_ packet: UnsafeMutableRawBufferPointer, sealer: PathCipher, on session: MuxSession) -> Refused {
        guard let header = try? PathHeader(parsing: UnsafeRawBufferPointer(packet)), header.kind == .datagram,
              let length = sealer.open(packet, headerLength: PathHeader.length, counter: header.counter),
              case .datagram(let stream, let endpoint, let payload)? =
                try? PathMessage.decode(.datagram, UnsafeRawBufferPointer(rebasing: packet[PathHeader.length..<PathHeader.length + length]))
        else { return .probe }
        return session.sendDatagramOnCarrier(stream: stream, endpoint: endpoint, payload: payload) ? .carried : .dropped
    }
}
