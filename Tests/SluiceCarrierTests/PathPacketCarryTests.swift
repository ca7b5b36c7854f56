import SluiceCrypto
import SluiceLoop
import SluiceMux
import SluiceWire
import XCTest

@testable import SluiceCarrier

/// Sealing path packets in place, and taking back one the kernel refused so that its datagram
/// rides the carrier.
final class PathPacketCarryTests: XCTestCase {
    /// A session's owner that keeps nothing: the carrier's output is not what these tests look at.
    private final class Owner: MuxSessionDelegate {
        var records = 0
        func session(_ session: MuxSession, didRequest stream: MuxStream, to destination: Destination) {}
        func session(_ session: MuxSession, sealRecord plaintext: UnsafeRawBufferPointer) { records += 1 }
        func queuedBytes(for session: MuxSession) -> Int { 0 }
        func sessionNeedsFlush(_ session: MuxSession) {}
    }

    private final class Quiet: MuxStreamHandler {
        func streamDidOpen(_ stream: MuxStream) {}
        func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer) {}
        func streamDidReceiveFIN(_ stream: MuxStream) {}
        func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {}
        func streamCanSend(_ stream: MuxStream) {}
    }

    private let endpoint = SocketEndpoint("192.0.2.7:53")!

    private func key() throws -> SymmetricKey { try SymmetricKey(bytes: [UInt8](repeating: 7, count: SymmetricKey.byteCount)) }

    /// A sealed datagram packet for `stream`, as a batch holds it.
    private func sealedDatagram(stream: UInt32, payload: [UInt8], sealer: PathCipher, counter: UInt64) -> [UInt8] {
        var room = [UInt8](repeating: 0, count: 256)
        let n = room.withUnsafeMutableBytes { room in
            PathPacket.seal(into: room, kind: .datagram, index: 5, counter: counter, sealer: sealer) { body in
                payload.withUnsafeBytes { p in PathMessage.encodeDatagram(stream: stream, endpoint: endpoint, payload: p, into: body) }
            }
        }
        return Array(room[0..<n!])
    }

    func testSealedPacketsOpenWithTheReceiversKey() throws {
        let packet = sealedDatagram(stream: 3, payload: [1, 2, 3], sealer: PathCipher(key: try key()), counter: 9)
        var copy = packet
        let header = try PathHeader(parsing: packet.withUnsafeBytes { UnsafeRawBufferPointer($0) })
        XCTAssertEqual(header.index, 5)
        XCTAssertEqual(header.counter, 9)
        let length = copy.withUnsafeMutableBytes { PathCipher(key: try! key()).open($0, headerLength: PathHeader.length, counter: 9) }
        XCTAssertNotNil(length)
        var room = [UInt8](repeating: 0, count: 64)
        let sealer = PathCipher(key: try key())
        XCTAssertNil(room.withUnsafeMutableBytes { PathPacket.seal(into: $0, kind: .probe, index: 5, counter: 0, sealer: sealer) { _ in nil } },
                     "nothing written, no packet")
    }

    func testARefusedDatagramRidesTheCarrier() throws {
        let owner = Owner()
        let session = MuxSession(role: .client, delegate: owner)
        let handler = Quiet()
        let association = session.openAssociation(to: Destination(host: .ip(IPAddress("192.0.2.7")!), port: 53), handler: handler)
        let sealer = PathCipher(key: try key())
        var packet = sealedDatagram(stream: association.id, payload: Array("late".utf8), sealer: sealer, counter: 1)
        let before = session.budgetRemaining
        let outcome = packet.withUnsafeMutableBytes { PathPacket.carryRefused($0, sealer: sealer, on: session) }
        XCTAssertEqual(outcome, PathPacket.Refused(datagrams: 1, carried: 1))
        XCTAssertLessThan(session.budgetRemaining, before, "the datagram is encoded on the carrier")

        var gone = sealedDatagram(stream: 77, payload: [1], sealer: sealer, counter: 2)
        XCTAssertEqual(gone.withUnsafeMutableBytes { PathPacket.carryRefused($0, sealer: sealer, on: session) },
                       PathPacket.Refused(datagrams: 1, carried: 0), "an association that closed meanwhile cannot take it")

        var probe = [UInt8](repeating: 0, count: 128)
        let n = probe.withUnsafeMutableBytes { room in
            PathPacket.seal(into: room, kind: .probe, index: 5, counter: 3, sealer: sealer) { PathMessage.encodeProbe(opaque: 1, length: 60, into: $0) }
        }
        var sealedProbe = Array(probe[0..<n!])
        XCTAssertEqual(sealedProbe.withUnsafeMutableBytes { PathPacket.carryRefused($0, sealer: sealer, on: session) },
                       PathPacket.Refused(datagrams: 0, carried: 0), "a probe holds no datagram")
    }

    /// A refused BUNDLE puts each of its datagrams on the carrier, in order; one whose association
    /// is gone is the only one lost.
    func testARefusedBundleRidesTheCarrierDatagramByDatagram() throws {
        let owner = Owner()
        let session = MuxSession(role: .client, delegate: owner)
        let handler = Quiet()
        let destination = Destination(host: .ip(IPAddress("192.0.2.7")!), port: 53)
        let first = session.openAssociation(to: destination, handler: handler)
        let second = session.openAssociation(to: destination, handler: handler)
        let bundle = PathBundle(loop: try EventLoop())
        for (stream, data) in [(first.id, "one"), (77, "gone"), (second.id, "three")] {
            _ = Array(data.utf8).withUnsafeBytes { bundle.append(stream: stream, endpoint: endpoint, payload: $0) }
        }
        let sealer = PathCipher(key: try key())
        var room = [UInt8](repeating: 0, count: 256)
        let kind = bundle.kind
        let n = try XCTUnwrap(room.withUnsafeMutableBytes { room in
            PathPacket.seal(into: room, kind: kind, index: 5, counter: 4, sealer: sealer) { bundle.take(into: $0) }
        })
        var packet = Array(room[0..<n])
        XCTAssertEqual(kind, .bundle)
        let before = session.budgetRemaining
        XCTAssertEqual(packet.withUnsafeMutableBytes { PathPacket.carryRefused($0, sealer: sealer, on: session) },
                       PathPacket.Refused(datagrams: 3, carried: 2))
        XCTAssertLessThan(session.budgetRemaining, before, "the two live associations' datagrams are encoded on the carrier")
    }
}
