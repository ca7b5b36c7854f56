import SluiceCrypto
import SluiceMux

/// Building and taking back the UDP path's packets (docs/protocol.md §8) where they are sent from,
/// for both ends (the client's `UDPPathClient`, the relay's `RelayUDPPath`): they seal each packet
/// straight into their `DatagramBatch` and, should the kernel refuse its size when the batch goes
/// out, put its datagrams on the carrier instead.
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
    public struct Refused: Equatable, Sendable {
        /// Datagrams it held: one for a DATAGRAM, several for a BUNDLE, none for a probe.
        public var datagrams: Int
        /// Those that went on the carrier, as one too big for the path goes; the others the carrier
        /// could not take either (budget full, association gone).
        public var carried: Int
    }

    /// Takes back a packet this end sealed with `sealer` (the same key opens it) and puts its
    /// datagrams on `session`'s carrier, so that a datagram the path accepted is not lost for a size
    /// the kernel learnt of only when the batch was sent.
    public static func carryRefused(_ packet: UnsafeMutableRawBufferPointer, sealer: PathCipher, on session: MuxSession) -> Refused {
        guard let header = try? PathHeader(parsing: UnsafeRawBufferPointer(packet)), header.kind == .datagram || header.kind == .bundle,
              let length = sealer.open(packet, headerLength: PathHeader.length, counter: header.counter),
              let message = try? PathMessage.decode(header.kind, UnsafeRawBufferPointer(rebasing: packet[PathHeader.length..<PathHeader.length + length]))
        else { return Refused(datagrams: 0, carried: 0) }
        switch message {
        case .datagram(let stream, let endpoint, let payload):
            return Refused(datagrams: 1, carried: session.sendDatagramOnCarrier(stream: stream, endpoint: endpoint, payload: payload) ? 1 : 0)
        case .bundle(let entries):
            var carried = 0
            for entry in entries where session.sendDatagramOnCarrier(stream: entry.stream, endpoint: entry.endpoint, payload: entry.payload) {
                carried += 1
            }
            return Refused(datagrams: entries.count, carried: carried)
        case .probe:
            return Refused(datagrams: 0, carried: 0)
        }
    }
}
