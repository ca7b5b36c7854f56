import SluiceWire
import XCTest

@testable import SluiceMux

/// The RESET of a UDP association the relay evicts at the client's cap (docs/protocol.md §6, item 5):
/// at once while the client may still use it, with the carrier's next record once the client was
/// seen evicting at its own cap too, at once again as soon as the client sends on one.
final class MuxEvictionTests: XCTestCase {
    private let endpoint = SocketEndpoint("192.0.2.7:53")!
    private let destination = Destination(host: .ip(IPAddress("192.0.2.7")!), port: 53)

    private func openAssociation(_ pair: MuxPair) throws -> (client: MuxStream, relay: MuxStream) {
        let client = pair.client.openAssociation(to: destination, handler: DatagramHandler())
        try pair.pump()
        return (client, pair.relayCarrier.requests.last!.stream)
    }

    /// The relay evicts `association` and the client, evicting it at its own cap, resets it too
    /// before the relay's RESET arrives: the two cross.
    private func evictOnBothEnds(_ association: (client: MuxStream, relay: MuxStream), _ pair: MuxPair) throws {
        association.relay.evict(message: "evicted")
        association.client.reset(.closed, urgent: false)
        try pair.pump()
    }

    func testAnEvictionsResetGoesAtOnceUntilTheClientIsSeenEvictingToo() throws {
        let pair = MuxPair()
        let first = try openAssociation(pair), second = try openAssociation(pair)

        let flushes = pair.relayCarrier.flushRequests
        try evictOnBothEnds(first, pair)
        XCTAssertEqual(pair.relayCarrier.flushRequests, flushes + 1, "the first eviction's RESET went at once")
        XCTAssertTrue(pair.relay.evictionResetsWait, "the client's RESET for an association the relay evicted")

        let (urgent, deferred) = (pair.relayCarrier.flushRequests, pair.relayCarrier.deferredFlushRequests)
        second.relay.evict(message: "evicted")
        XCTAssertEqual(pair.relayCarrier.flushRequests, urgent, "no record of its own")
        XCTAssertEqual(pair.relayCarrier.deferredFlushRequests, deferred + 1, "it waits for the next record")
        XCTAssertFalse(second.client.isClosed)
        try pair.pump()
        XCTAssertTrue(second.client.isClosed, "the RESET came with the next record")
        XCTAssertEqual(pair.relay.associationCount, 0)
    }

    /// A client RESET for an association that ended otherwise (the client's own idle timeout, or
    /// one the relay did not evict) says nothing about the client's cap.
    func testAClientResetOfAnAssociationTheRelayDidNotEvictChangesNothing() throws {
        let pair = MuxPair()
        let first = try openAssociation(pair)
        first.relay.reset(.timedOut, message: "idle for 60 s")
        first.client.reset(.closed, urgent: false)
        try pair.pump()
        XCTAssertFalse(pair.relay.evictionResetsWait)
    }

    /// The client sends on an association the relay evicted while its RESET waited: the client is
    /// still using what the relay evicts (its cap is the higher one), so that RESET goes now, and
    /// the next eviction's at once — for a datagram on the UDP path as on the carrier.
    func testADatagramOnAnEvictedAssociationSendsTheResetsAtOnceAgain() throws {
        for onPath in [true, false] {
            let pair = MuxPair()
            let (first, second, third) = (try openAssociation(pair), try openAssociation(pair), try openAssociation(pair))
            try evictOnBothEnds(first, pair)
            XCTAssertTrue(pair.relay.evictionResetsWait)

            second.relay.evict(message: "evicted")
            let flushes = pair.relayCarrier.flushRequests
            if onPath {
                XCTAssertFalse(Array("late".utf8).withUnsafeBytes { pair.relay.receivePathDatagram(stream: second.client.id, endpoint: endpoint, payload: $0) },
                               "not delivered: the association is gone")
                XCTAssertEqual(pair.relayCarrier.flushRequests, flushes + 1, "the waiting RESET goes now")
            } else {
                XCTAssertTrue(Array("late".utf8).withUnsafeBytes { second.client.sendDatagram($0, endpoint: endpoint) })
                try pair.pump()
            }
            XCTAssertFalse(pair.relay.evictionResetsWait, "onPath=\(onPath)")
            try pair.pump()
            XCTAssertTrue(second.client.isClosed, "onPath=\(onPath): the RESET arrived")

            let urgent = pair.relayCarrier.flushRequests
            third.relay.evict(message: "evicted")
            XCTAssertEqual(pair.relayCarrier.flushRequests, urgent + 1, "onPath=\(onPath): at once again")
        }
    }

    /// The relay remembers its latest evictions only: a client RESET for one evicted long before
    /// says nothing; a client that never resets cannot make it remember more.
    func testOnlyTheLatestEvictionsAreRemembered() {
        var pacing = EvictionPacing()
        let total = UInt32(EvictionPacing.remembered) * 3 + 7
        for id in 1...total { XCTAssertTrue(pacing.evicted(id * 2 + 1)) }
        pacing.clientReset(3)  // the oldest: forgotten
        XCTAssertFalse(pacing.clientEvictsToo)
        XCTAssertFalse(pacing.datagramArrived(for: 3))
        pacing.clientReset(total * 2 + 1)  // the newest
        XCTAssertTrue(pacing.clientEvictsToo)
        XCTAssertFalse(pacing.evicted(total * 2 + 3), "RESETs wait now")
        XCTAssertTrue(pacing.datagramArrived(for: total * 2 + 3))
        XCTAssertFalse(pacing.clientEvictsToo)
    }
}
