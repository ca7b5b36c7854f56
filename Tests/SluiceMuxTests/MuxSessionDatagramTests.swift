import SluiceTestSupport
import SluiceWire
import XCTest

@testable import SluiceMux

/// Datagram frames at the relay's session: accepted on an association it knows, refused on a stream
/// never opened, and DATAGRAM_ERROR — which only the relay sends — refused from the client.
final class MuxSessionDatagramTests: XCTestCase {
    final class Delegate: MuxSessionDelegate {
        var requested: [UInt32] = []
        func session(_ session: MuxSession, didRequest stream: MuxStream, to destination: Destination) {
            requested.append(stream.id)
        }
        func session(_ session: MuxSession, sealRecord plaintext: UnsafeRawBufferPointer) {}
        func queuedBytes(for session: MuxSession) -> Int { 0 }
        func sessionNeedsFlush(_ session: MuxSession) {}
    }

    func testDatagramFramesOnKnownStreamsAreTakenAndOthersRefused() throws {
        let delegate = Delegate()
        let relay = MuxSession(role: .relay, delegate: delegate)
        let open = try encode([
            .open(stream: 1, window: 0, proto: .udp, destination: Destination(SocketEndpoint("8.8.8.8:53")!))
        ])
        try open.withUnsafeBytes { try relay.receive(record: $0) }
        XCTAssertEqual(delegate.requested, [1])
        let known = hex("0a 00000001 000a  02 01 08080808 0035 6869")
        XCTAssertNoThrow(try known.withUnsafeBytes { try relay.receive(record: $0) })
        let error = hex("0b 00000001 000a  01 0000 01 08080808 0035")
        XCTAssertThrowsError(try error.withUnsafeBytes { try relay.receive(record: $0) })
        let unknown = hex("0a 00000003 0002  00 21")
        XCTAssertThrowsError(try unknown.withUnsafeBytes { try relay.receive(record: $0) }) {
            guard case .unknownStream(3, "DATAGRAM")? = $0 as? MuxError else { return XCTFail("\($0)") }
        }
    }
}
