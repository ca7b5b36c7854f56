import SluiceMux
import SluiceWire
import XCTest

/// Records the datagram calls of a UDP association.
final class DatagramHandler: MuxStreamHandler {
    var datagrams: [(payload: [UInt8], endpoint: SocketEndpoint)] = []
    var errors: [(DatagramErrorCode, Int, SocketEndpoint)] = []
    var resets: [ResetReason] = []

    func stream(_ stream: MuxStream, didReceiveDatagram payload: UnsafeRawBufferPointer, endpoint: SocketEndpoint) {
        datagrams.append((Array(payload), endpoint))
    }
    func stream(_ stream: MuxStream, datagramTo endpoint: SocketEndpoint, failed code: DatagramErrorCode, mtu: Int) {
        errors.append((code, mtu, endpoint))
    }
    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) { resets.append(reason) }
}

/// UDP associations on a session (docs/protocol.md §6).
final class MuxDatagramTests: XCTestCase {
    let serverA = SocketEndpoint("192.0.2.10:5000")!
    let serverB = SocketEndpoint("[2001:db8::b]:6000")!

    /// An association with a DatagramHandler on both ends (the relay's installed on OPEN).
    private func associate(_ pair: MuxPair) throws -> (client: MuxStream, clientHandler: DatagramHandler, relay: () -> MuxStream, relayHandler: DatagramHandler) {
        let relayHandler = DatagramHandler()
        pair.relayCarrier.onRequest = { stream, _ in
            stream.handler = relayHandler
            stream.accept()
        }
        let handler = DatagramHandler()
        let stream = pair.client.openAssociation(to: Destination(serverA), handler: handler)
        return (stream, handler, { pair.relayCarrier.requests.first { $0.stream.id == stream.id }!.stream }, relayHandler)
    }

    func testDatagramsBothWaysWithRealEndpoints() throws {
        let pair = MuxPair(autoAccept: false)
        let a = try associate(pair)
        // Sent before OPEN_OK: allowed, and delivered after the OPEN that precedes it.
        XCTAssertTrue(([1, 2, 3] as [UInt8]).withUnsafeBytes { a.client.sendDatagram($0, endpoint: serverA) })
        try pair.pump()
        XCTAssertTrue(a.relay().isAssociation)
        XCTAssertEqual(a.relayHandler.datagrams.map(\.payload), [[1, 2, 3]])
        XCTAssertEqual(a.relayHandler.datagrams.map(\.endpoint), [serverA])

        // Replies from any source, each with its own endpoint (full cone).
        XCTAssertTrue(([9] as [UInt8]).withUnsafeBytes { a.relay().sendDatagram($0, endpoint: serverA) })
        XCTAssertTrue(([8, 8] as [UInt8]).withUnsafeBytes { a.relay().sendDatagram($0, endpoint: serverB) })
        XCTAssertTrue([UInt8]().withUnsafeBytes { a.relay().sendDatagram($0, endpoint: serverB) }, "empty datagrams are datagrams too")
        try pair.pump()
        XCTAssertEqual(a.clientHandler.datagrams.map(\.payload), [[9], [8, 8], []])
        XCTAssertEqual(a.clientHandler.datagrams.map(\.endpoint), [serverA, serverB, serverB])
    }

    func testMaximalDatagramsSpanRecordsAndArriveWhole() throws {
        let pair = MuxPair()
        let a = try associate(pair)
        let big = (0..<65_535).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        try pair.pump()
        let other = pair.client.openAssociation(to: Destination(serverB), handler: DatagramHandler())
        XCTAssertTrue(big.withUnsafeBytes { a.client.sendDatagram($0, endpoint: serverA) })
        XCTAssertTrue(([5, 5] as [UInt8]).withUnsafeBytes { other.sendDatagram($0, endpoint: serverB) })
        XCTAssertTrue(big.withUnsafeBytes { a.client.sendDatagram($0, endpoint: serverB) })
        pair.client.flush()
        XCTAssertGreaterThanOrEqual(pair.clientCarrier.records.count, 3, "two 65,535-byte datagrams need three records")
        try pair.pump()
        // One handler serves both relay-side associations here; order is the order sent.
        XCTAssertEqual(a.relayHandler.datagrams.count, 3)
        XCTAssertTrue(a.relayHandler.datagrams[0].payload == big && a.relayHandler.datagrams[2].payload == big)
        XCTAssertEqual(a.relayHandler.datagrams[1].payload, [5, 5])
        XCTAssertEqual(a.relayHandler.datagrams.map(\.endpoint), [serverA, serverB, serverB])

        XCTAssertTrue(big.withUnsafeBytes { a.relay().sendDatagram($0, endpoint: serverB) })
        try pair.pump()
        XCTAssertTrue(a.clientHandler.datagrams.last?.payload == big)
        XCTAssertEqual(a.clientHandler.datagrams.last?.endpoint, serverB)
    }

    func testDatagramsAreDroppedNotQueuedWhenTheCarrierIsFull() throws {
        let pair = MuxPair()
        let a = try associate(pair)
        try pair.pump()
        let before = pair.clientCarrier.records.count
        pair.clientCarrier.extraQueued = pair.client.settings.carrierBudget - 100
        XCTAssertFalse([UInt8](repeating: 1, count: 200).withUnsafeBytes { a.client.sendDatagram($0, endpoint: serverA) })
        pair.client.flush()
        XCTAssertEqual(pair.clientCarrier.records.count, before, "a refused datagram encodes nothing")
        XCTAssertTrue([UInt8](repeating: 1, count: 50).withUnsafeBytes { a.client.sendDatagram($0, endpoint: serverA) })
    }

    func testDatagramErrorsReachTheClient() throws {
        let pair = MuxPair()
        let a = try associate(pair)
        try pair.pump()
        a.relay().sendDatagramError(.portUnreachable, endpoint: serverA)
        a.relay().sendDatagramError(.tooBig, mtu: 1280, endpoint: serverB)
        try pair.pump()
        XCTAssertEqual(a.clientHandler.errors.map(\.0), [.portUnreachable, .tooBig])
        XCTAssertEqual(a.clientHandler.errors.map(\.1), [0, 1280])
        XCTAssertEqual(a.clientHandler.errors.map(\.2), [serverA, serverB])
    }

    func testDatagramOnATCPStreamBreaksTheCarrier() throws {
        let pair = MuxPair()
        let tcp = try pair.openStream()
        // A TCP stream refuses to send datagrams locally...
        XCTAssertFalse(([1] as [UInt8]).withUnsafeBytes { tcp.client.sendDatagram($0, endpoint: serverA) })
        // ...and a peer that sends one anyway is broken.
        var record = [UInt8](repeating: 0, count: 64)
        let n = record.withUnsafeMutableBytes { buffer -> Int in
            var encoder = FrameEncoder(buffer)
            _ = ([7] as [UInt8]).withUnsafeBytes { encoder.appendDatagram(stream: tcp.client.id, endpoint: serverA, payload: $0) }
            return encoder.count
        }
        XCTAssertThrowsError(try record.withUnsafeBytes { try pair.relay.receive(record: UnsafeRawBufferPointer(rebasing: $0[0..<n])) })
    }
}
