import SluiceCrypto
import SluiceMux
import SluiceWire
import XCTest

@testable import SluiceRelay

/// The relay's stream windows stay at the announced size (RelaySettings.mux): an upload's bytes wait
/// in the relay's memory, which all its clients share. The client's grow (ReceiveWindowGrowthTests).
final class RelayWindowTests: XCTestCase {
    func testAnUploadThatKeepsUpKeepsTheRelaysWindow() throws {
        let key = PrivateKey.generate()
        let settings = RelaySettings(listen: SocketEndpoint("127.0.0.1:0")!, privateKey: key, allowedClients: [],
                                     psk: nil, maxStreamsPerClient: 16, handshakeTimeoutMilliseconds: 1000)
        let pair = SessionPair(relay: settings.mux)
        let window = settings.mux.streamWindow
        var relayStream: MuxStream?
        pair.relayCarrier.onRequest = { stream, _ in
            relayStream = stream
            stream.accept()
        }
        let client = pair.client.open(to: Destination(host: .ip(IPAddress("192.0.2.1")!), port: 443), handler: NullHandler())
        try pair.pump()
        for round in 0..<3 {  // three windows, each consumed at once: a client's stream would grow
            var sent = 0
            while sent < window {
                sent += [UInt8](repeating: UInt8(round), count: window - sent).withUnsafeBytes { client.send($0) }
                try pair.pump()
            }
            relayStream?.consumed(window)
            try pair.pump()
            XCTAssertEqual(client.sendCredit, window, "round \(round)")
        }
    }
}

private final class NullHandler: MuxStreamHandler {
    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {}
}
