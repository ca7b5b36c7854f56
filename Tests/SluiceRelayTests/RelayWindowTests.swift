import SluiceCrypto
import SluiceMux
import SluiceWire
import XCTest

@testable import SluiceRelay

/// The relay's stream windows grow for an upload that keeps up, as the client's do for a download
/// (ReceiveWindowGrowthTests), but within one pool for all of its carriers
/// (`RelaySettings.windowGrowthPoolBytes`): an upload's bytes wait in the relay's memory, which all
/// its clients share. Each carrier draws on it as `RelayWorker.carrierSettings` gives it.
final class RelayWindowTests: XCTestCase {
    private let destination = Destination(host: .ip(IPAddress("192.0.2.1")!), port: 443)

    /// A carrier as the relay runs one, its client, and the relay end of one stream the client opened.
    private func upload(_ pool: WindowGrowthPool) throws -> (pair: SessionPair, client: MuxStream, relay: MuxStream) {
        var relaySettings = MuxSettings()
        relaySettings.windowGrowthPool = pool
        let pair = SessionPair(relay: relaySettings)
        var relayStream: MuxStream?
        pair.relayCarrier.onRequest = { stream, _ in
            relayStream = stream
            stream.accept()
        }
        let client = pair.client.open(to: destination, handler: NullHandler())
        try pair.pump()
        return (pair, client, try XCTUnwrap(relayStream))
    }

    /// Sends the client's whole credit and has the relay's destination take it at once (a next hop
    /// that keeps up); returns the client's credit afterwards.
    private func sendAndConsumeOneWindow(_ s: (pair: SessionPair, client: MuxStream, relay: MuxStream)) throws -> Int {
        let window = s.client.sendCredit
        var sent = 0
        while sent < window {
            sent += [UInt8](repeating: 0x5A, count: window - sent).withUnsafeBytes { s.client.send($0) }
            try s.pair.pump()
        }
        s.relay.consumed(window)
        try s.pair.pump()
        return s.client.sendCredit
    }

    func testAnUploadThatKeepsUpGrowsTheRelaysWindowFromThePool() throws {
        let pool = WindowGrowthPool(bytes: RelaySettings.defaultWindowGrowthPoolBytes)
        let s = try upload(pool)
        let window = MuxSettings().streamWindow
        XCTAssertEqual(try sendAndConsumeOneWindow(s), 2 * window, "credit for the window plus its growth")
        XCTAssertEqual(pool.available, pool.bytes - window, "the growth came from the pool")
        XCTAssertEqual(s.pair.relay.windowGrowth, window, "the carrier's share of the pool, as `sluice status` shows its client's")
    }

    /// What one carrier's stream was granted, no other carrier's can be until that stream closes or its
    /// carrier does (a broken carrier's streams give theirs back too).
    func testThePoolCapsGrowthAcrossCarriersAndClosingGivesItBack() throws {
        let window = MuxSettings().streamWindow
        let pool = WindowGrowthPool(bytes: window)  // room for one doubling
        let first = try upload(pool)
        XCTAssertEqual(try sendAndConsumeOneWindow(first), 2 * window)
        XCTAssertEqual(pool.available, 0)

        let second = try upload(pool)
        XCTAssertEqual(try sendAndConsumeOneWindow(second), window, "the pool is spent: no growth on another carrier")

        first.pair.relay.close(.closed, message: "carrier broke")
        XCTAssertEqual(pool.available, window, "the closed carrier's stream gave its growth back")
        XCTAssertEqual(try sendAndConsumeOneWindow(second), 2 * window, "and the other carrier's stream grows now")
        XCTAssertEqual(pool.available, 0)

        second.client.finish()
        second.relay.finish()
        try second.pair.pump()
        XCTAssertTrue(second.relay.isClosed)
        XCTAssertEqual(pool.available, window, "a stream that ended gave its growth back")
        XCTAssertEqual(second.pair.relay.windowGrowth, 0)
    }
}

private final class NullHandler: MuxStreamHandler {
    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {}
}
