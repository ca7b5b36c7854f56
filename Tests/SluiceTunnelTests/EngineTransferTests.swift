import Glibc
import SluiceIO
import SluiceStack
import SluiceSystem
import SluiceTestSupport
@testable import SluiceTunnel
import SluiceWire
import XCTest

/// The engine end to end in one process: application packets in, a real relay and real servers out.
final class EngineTransferTests: XCTestCase {
    private var harness: EngineHarness!
    private var echo: LoopTCPEchoServer!

    override func setUpWithError() throws {
        harness = try EngineHarness()
        echo = try LoopTCPEchoServer(on: harness.host, loop: harness.loop)
    }

    override func tearDown() {
        echo?.close()
        harness?.shutdown()
        harness = nil
        super.tearDown()
    }

    func testTCPTransferBothWaysArrivesIntactAndStatisticsCountIt() throws {
        harness.waitConnected()
        let upload = content(3 << 20, seed: 1)
        let app = harness.connectTCP(to: echo.endpoint)
        XCTAssertTrue(harness.run { app.state == .established }, "handshake through the relay")
        app.write(upload)
        app.shutdownWrite()
        XCTAssertTrue(harness.run(until: { app.isDone }, timeoutMilliseconds: 30_000), "transfer did not finish: received \(app.received.count)")
        XCTAssertEqual(echo.bytesReceived, upload.count, "the server got every byte")
        XCTAssertEqual(sha256(app.received), sha256(upload), "the echo came back intact")
        XCTAssertTrue(app.receivedFIN, "the server's FIN reached the application")

        let stats = harness.engine.statistics()
        XCTAssertEqual(stats.traffic.tcpBytesUp, upload.count, "payload up counted exactly")
        XCTAssertEqual(stats.traffic.tcpBytesDown, upload.count, "payload down counted exactly")
        XCTAssertEqual(stats.state, .connected)
        XCTAssertEqual(stats.carriers.count, 1)
        XCTAssertEqual(stats.carriers[0].state, .up)
        XCTAssertGreaterThan(stats.carriers[0].bytesSent, upload.count, "records carry the payload and their overhead")
        XCTAssertGreaterThan(stats.carriers[0].recordsReceived, 0)
        XCTAssertNotNil(stats.carriers[0].lastHandshake)
        XCTAssertGreaterThan(stats.traffic.packetsFromApplications, 0)
        XCTAssertTrue(stats.drops.isEmpty, "nothing dropped: \(stats.drops)")
    }

    /// The harness again, over a flow with segmentation offload (as a TUN with IFF_VNET_HDR), with
    /// its echo server.
    private func restartOverASegmentingFlow() throws {
        echo.close()
        harness.shutdown()
        harness = nil
        harness = try EngineHarness(offloads: [.checksum, .tcpSegmentation])
        echo = try LoopTCPEchoServer(on: harness.host, loop: harness.loop)
        harness.waitConnected()
    }

    func testSuperPacketsThroughASegmentingFlowArriveIntact() throws {
        try restartOverASegmentingFlow()
        let upload = content(1 << 20, seed: 2)
        let app = harness.connectTCP(to: echo.endpoint)
        app.write(upload)
        app.shutdownWrite()
        XCTAssertTrue(harness.run(until: { app.isDone }, timeoutMilliseconds: 30_000))
        XCTAssertEqual(sha256(app.received), sha256(upload))
        XCTAssertGreaterThan(harness.engine.statistics().events["super-packets"] ?? 0, 0, "the engine joined segments")
    }

    /// A short answer is one lone segment: with data checksums left to the output (lwIP does not
    /// sum what it copies where its checksum is Sluice's, as in this bundle), it too must leave
    /// with a partial checksum, or the application (here the harness, which verifies every
    /// checksum) would drop it.
    func testALoneSegmentThroughASegmentingFlowIsWhole() throws {
        try restartOverASegmentingFlow()
        XCTAssertTrue(TCPStack.takesUnverifiedSegments, "lwIP's checksum is Sluice's in this bundle (Package.swift)")
        let app = harness.connectTCP(to: echo.endpoint)
        let request = Array("one short request".utf8)
        app.write(request)
        app.shutdownWrite()
        XCTAssertTrue(harness.run(until: { app.isDone }, timeoutMilliseconds: 10_000))
        XCTAssertEqual(app.received, request)
    }

    /// While data flows both ways, most loop turns end with segments still held for a gathered write
    /// when lwIP's timers fall due; lwIP would skip a pcb's retransmission timeout for that tick if one
    /// of its unacknowledged segments were held, so the engine writes them first. The transfer spans
    /// several of lwIP's 250 ms ticks.
    func testHeldSegmentsAreWrittenBeforeLwIPTimersRun() throws {
        try restartOverASegmentingFlow()
        let app = harness.connectTCP(to: echo.endpoint)
        XCTAssertTrue(harness.run { app.state == .established }, "handshake through the relay")
        let chunk = content(256 << 10, seed: 3)
        let start = MonotonicClock.milliseconds()
        var written = 0
        while MonotonicClock.milliseconds() - start < 1_500 {
            app.write(chunk)
            written += chunk.count
            XCTAssertTrue(harness.run(until: { app.received.count == written }, timeoutMilliseconds: 10_000),
                          "echo stalled at \(app.received.count) of \(written) bytes")
        }
        XCTAssertGreaterThan(harness.engine.statistics().events["super-packets"] ?? 0, 0, "output went through gathered writes")
        XCTAssertEqual(harness.engine.stack.counters.timersRunWithHeldOutput, 0,
                       "lwIP's timers ran while segments were held")
    }

    /// Super-packets from the application (a kernel with segmentation offload writes them to a TUN)
    /// go to lwIP in the memory they were read into (`PacketBatch.take`); the bytes arrive intact.
    func testSuperPacketsFromTheApplicationArriveIntact() throws {
        try restartOverASegmentingFlow()
        let upload = content(4 << 20, seed: 4)
        let app = harness.connectTCP(to: echo.endpoint, segmentSize: 60_000)
        app.write(upload)
        app.shutdownWrite()
        XCTAssertTrue(harness.run(until: { app.isDone }, timeoutMilliseconds: 30_000), "transfer did not finish: received \(app.received.count)")
        XCTAssertEqual(echo.bytesReceived, upload.count)
        XCTAssertEqual(sha256(app.received), sha256(upload))
    }

    /// A destination that reads nothing for a while: once its window and the relay's send buffer
    /// (4 MiB at most, tcp_wmem) are full, the relay's writes stop part-way, inside a carrier read's
    /// frames (`DestinationLink.writeHeld`), and what it keeps goes out later, in order, before the FIN.
    func testAnUploadToADestinationThatStallsArrivesIntactAndInOrder() throws {
        harness.waitConnected()
        try uploadToAStallingDestination(segmentSize: nil)
    }

    /// The same with super-packets: while the stream has no credit, lwIP keeps segments that were
    /// read into the flow's batch (adopted, not copied) across the reads that refill the batch, and
    /// every byte must still be the application's.
    func testSuperPacketsKeptWhileTheDestinationStallsArriveIntact() throws {
        try restartOverASegmentingFlow()
        try uploadToAStallingDestination(segmentSize: 60_000)
    }

    private func uploadToAStallingDestination(segmentSize: Int?, file: StaticString = #filePath, line: UInt = #line) throws {
        let listener = try Socket.listen(on: SocketEndpoint(address: harness.host, port: 0))
        defer { listener.close() }
        // A small receive buffer, set before the connection exists so that the window stays small.
        try listener.setOption(SOL_SOCKET, SO_RCVBUF, 4096, "SO_RCVBUF")
        let upload = content(8 << 20, seed: 3)
        let app = harness.connectTCP(to: try listener.localEndpoint(), segmentSize: segmentSize)
        var server: Socket?
        XCTAssertTrue(harness.run {
            if server == nil, case .done(let (s, _))? = try? listener.accept() { server = s }
            return server != nil && app.state == .established
        }, "the destination accepted the relay's connection", file: file, line: line)
        guard let server else { return }
        defer { server.close() }
        app.write(upload)
        app.shutdownWrite()
        // Nothing read for a second: the relay holds what the destination's window does not take.
        _ = harness.run(until: { false }, timeoutMilliseconds: 1_000)
        var received: [UInt8] = []
        var sawEOF = false
        var buffer = [UInt8](repeating: 0, count: 65_536)
        try harness.loop.register(fd: server.fd, events: [.readable, .readHangup]) { _ in
            while !sawEOF, case .done(let n)? = try? buffer.withUnsafeMutableBytes({ try server.read(into: $0) }) {
                if n == 0 { sawEOF = true } else { received += buffer[0..<n] }
            }
        }
        defer { harness.loop.deregister(fd: server.fd) }
        XCTAssertTrue(harness.run(until: { sawEOF }, timeoutMilliseconds: 30_000),
                      "the FIN arrived: \(received.count) of \(upload.count) bytes", file: file, line: line)
        XCTAssertEqual(received.count, upload.count, file: file, line: line)
        XCTAssertEqual(sha256(received), sha256(upload), "every byte, in order", file: file, line: line)
    }

    func testRefusedDestinationGivesTheApplicationARST() throws {
        harness.waitConnected()
        // The echo server's port once it is closed: nothing listens there any more.
        let closed = echo.endpoint
        echo.close()
        echo = nil
        let app = harness.connectTCP(to: closed)
        XCTAssertTrue(harness.run { app.state == .closed }, "no answer to the SYN")
        XCTAssertTrue(app.refused, "the SYN was answered with RST (connect() fails with ECONNREFUSED)")
        XCTAssertEqual(harness.engine.statistics().drops["tcp-refused-by-relay-refused"], 1)
    }

    func testKilledCarrierResetsFlowsAndReconnects() throws {
        harness.waitConnected()
        let app = harness.connectTCP(to: echo.endpoint)
        XCTAssertTrue(harness.run { app.state == .established })
        app.write(content(64 << 10, seed: 3))
        XCTAssertTrue(harness.run { app.received.count == 64 << 10 })

        try harness.killRelay(restart: true)
        XCTAssertTrue(harness.run { app.wasReset }, "the flow on the lost carrier is reset at once")
        XCTAssertTrue(harness.run { [unowned self] in self.harness.engine.state == .connected && self.harness.events.last == .connected },
                      "the carrier was redialled")
        guard let reconnecting = harness.events.firstIndex(where: { if case .reconnecting = $0 { return true } else { return false } }) else {
            return XCTFail("no reconnecting event: \(harness.events)")
        }
        XCTAssertEqual(harness.events.first, .connecting)
        XCTAssertEqual(harness.events.last, .connected)
        XCTAssertGreaterThan(harness.events.lastIndex(of: .connected)!, reconnecting, "connected again after reconnecting")

        let again = harness.connectTCP(to: echo.endpoint)
        again.write(Array("after the reconnect".utf8))
        again.shutdownWrite()
        XCTAssertTrue(harness.run { again.isDone })
        XCTAssertEqual(again.received, Array("after the reconnect".utf8), "new flows work")
        XCTAssertEqual(harness.engine.statistics().carriers[0].reconnects, 1)
    }

    func testStopEmitsDisconnectedAndClosesFlows() throws {
        harness.waitConnected()
        let app = harness.connectTCP(to: echo.endpoint)
        XCTAssertTrue(harness.run { app.state == .established })
        harness.engine.stop()
        XCTAssertEqual(harness.events.last, .disconnected(nil))
        XCTAssertEqual(harness.engine.state, .disconnected)
    }

    /// The host says the path to the relay changed (`reconnect`, as `sluice up`'s network watch does):
    /// the carrier from another source address is closed, its flow reset at once, the reason reaches
    /// the events, and the carrier is back without waiting out a backoff.
    func testReconnectForANetworkChangeResetsFlowsAndRedialsAtOnce() throws {
        harness.waitConnected()
        let app = harness.connectTCP(to: echo.endpoint)
        XCTAssertTrue(harness.run { app.state == .established })

        // The carrier's source is loopback: a network change that keeps it closes nothing.
        XCTAssertEqual(harness.engine.reconnect(reason: "network changed", keepingCarriersFrom: IPAddress("127.0.0.1")!), 0)
        XCTAssertFalse(app.wasReset)

        let started = harness.loop.now
        XCTAssertEqual(harness.engine.reconnect(reason: "network changed", keepingCarriersFrom: IPAddress("192.0.2.7")!), 1)
        XCTAssertTrue(harness.run { app.wasReset }, "the flow on the closed carrier is reset at once")
        XCTAssertTrue(harness.events.contains(.reconnecting(reason: "network changed")), "\(harness.events)")
        XCTAssertTrue(harness.run { [unowned self] in self.harness.engine.state == .connected }, "redialled")
        XCTAssertLessThan(harness.loop.now - started, 1_000, "no backoff before the redial")
        XCTAssertEqual(harness.engine.statistics().carriers[0].reconnects, 1)

        let again = harness.connectTCP(to: echo.endpoint)
        again.write(Array("after the change".utf8))
        again.shutdownWrite()
        XCTAssertTrue(harness.run { again.isDone })
        XCTAssertEqual(again.received, Array("after the change".utf8), "new flows work")
    }
}
