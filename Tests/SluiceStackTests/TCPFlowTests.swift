import SluiceStack
import SluiceWire
import SluiceTestSupport
import XCTest

/// Bytes both ways through an accepted flow, and its end by RST.
final class TCPFlowTests: StackTestCase {
    func testApplicationDataReachesTheFlowInOrder() throws {
        for (application, destination) in [("10.0.0.2:\(freshPort())", "203.0.113.7:443"), ("[fd00::2]:\(freshPort())", "[2001:db8::7]:443")] {
            var app = Application(from: application, to: destination)
            let flow = try harness.connect(&app)
            let handler = try XCTUnwrap(delegate.handlers[app.key])

            harness.input(app.data(Array("GET / HTTP/1.1\r\n".utf8)))
            XCTAssertEqual(handler.inputCount, 1)
            harness.input(app.data(Array("Host: example\r\n\r\n".utf8)))
            XCTAssertEqual(handler.inputCount, 2)

            var read: [UInt8] = []
            let n = flow.read { chunk in
                read.append(contentsOf: chunk)
                return chunk.count
            }
            XCTAssertEqual(n, read.count)
            XCTAssertEqual(String(decoding: read, as: UTF8.self), "GET / HTTP/1.1\r\nHost: example\r\n\r\n")
            XCTAssertEqual(flow.read { $0.count }, 0, "everything was read")
            XCTAssertFalse(flow.inputEnded)
            flow.abort()
        }
    }

    func testPartialReadsKeepTheRestForLater() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        harness.input(app.data(Array(bytes[0..<600])))
        harness.input(app.data(Array(bytes[600...])))
        var read: [UInt8] = []
        // Take at most 250 bytes per call, as a consumer with little room would.
        while true {
            var budget = 250
            let n = flow.read { chunk in
                let take = min(budget, chunk.count)
                read.append(contentsOf: chunk.prefix(take))
                budget -= take
                return take
            }
            if n == 0 { break }
            XCTAssertLessThanOrEqual(n, 250)
        }
        XCTAssertEqual(read, bytes)
    }

    func testWriteEmitsADataSegmentTowardTheApplication() throws {
        var app = Application(from: "[fd00::2]:\(freshPort())", to: "[2001:db8::7]:443")
        let flow = try harness.connect(&app)
        harness.input(app.data(Array("ping".utf8)))
        XCTAssertEqual(flow.read { $0.count }, 4)
        tun.packets.removeAll()

        let reply = Array("HTTP/1.1 200 OK\r\n\r\npong".utf8)
        XCTAssertGreaterThanOrEqual(flow.writableBytes, reply.count)
        XCTAssertEqual(reply.withUnsafeBytes { flow.write($0) }, reply.count)
        stack.flushOutput()
        let segments = tun.takeSegments().filter { !$0.payload.isEmpty }
        XCTAssertEqual(segments.count, 1, "\(segments)")
        let segment = try XCTUnwrap(segments.first)
        XCTAssertEqual(segment.payload, reply)
        XCTAssertEqual(segment.source, app.key.destination)
        XCTAssertEqual(segment.destination, app.key.application)
        XCTAssertEqual(segment.sequenceNumber, app.ack, "the first byte after the SYN")
        XCTAssertEqual(segment.acknowledgmentNumber, app.seq, "acknowledges the 4 bytes read")
        XCTAssertTrue(segment.flags.contains(.ack))

        // The application acknowledges; lwIP reports the freed send space.
        app.ack &+= UInt32(reply.count)
        harness.input(app.segment(.ack))
        XCTAssertEqual(delegate.handlers[app.key]?.canWriteCount, 1)
    }

    func testLargeWriteIsSplitIntoSegmentsOfAtMostTheMSS() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        let taken = bytes.withUnsafeBytes { flow.write($0) }
        XCTAssertGreaterThan(taken, 1460)
        stack.flushOutput()
        let segments = tun.takeSegments().filter { !$0.payload.isEmpty }
        XCTAssertTrue(segments.allSatisfy { $0.payload.count <= 1460 }, "\(segments)")
        var sent: [UInt8] = []
        var expected = app.ack
        for segment in segments {
            XCTAssertEqual(segment.sequenceNumber, expected)
            expected &+= UInt32(segment.payload.count)
            sent += segment.payload
        }
        XCTAssertGreaterThan(sent.count, 0)
        XCTAssertEqual(sent, Array(bytes[0..<sent.count]), "segments carry the written bytes in order")
    }

    /// The application advertises a large MSS, but the TUN's MTU bounds what the stack emits.
    func testSegmentsFitTheTUNMTU() throws {
        harness.stack.shutdown()
        let small = try StackHarness(mtu: 1280)
        defer { small.stack.shutdown() }
        for (application, destination) in [("10.0.0.2:\(freshPort())", "203.0.113.7:443"), ("[fd00::2]:\(freshPort())", "[2001:db8::7]:443")] {
            var app = Application(from: application, to: destination)
            let flow = try small.connect(&app)
            let bytes = [UInt8](repeating: 0x61, count: 8000)
            XCTAssertGreaterThan(bytes.withUnsafeBytes { flow.write($0) }, 2000)
            small.stack.flushOutput()
            let packets = small.tun.take()
            XCTAssertGreaterThan(packets.count, 1)
            XCTAssertTrue(packets.allSatisfy { $0.count <= 1280 }, "\(destination): \(packets.map(\.count))")
            flow.abort()
        }
    }

    /// With large segments (a GSO output path) lwIP emits up to 8 KiB per segment, past the MTU, the
    /// bytes still in order; its SYN-ACK still announces an MSS that fits the MTU.
    func testLargeSegmentsExceedTheMTUForAGSOOutput() throws {
        harness.stack.shutdown()
        let large = try StackHarness(mtu: 1500, largeSegments: true)
        defer { large.stack.shutdown() }
        for (application, destination) in [("10.0.0.2:\(freshPort())", "203.0.113.7:443"), ("[fd00::2]:\(freshPort())", "[2001:db8::7]:443")] {
            var app = Application(from: application, to: destination)
            large.input(app.syn())
            large.stack.admit(app.key)
            let synAck = try XCTUnwrap(large.tun.takeSegments().first { $0.flags == [.syn, .ack] })
            XCTAssertLessThanOrEqual(synAck.maximumSegmentSize ?? 0, 1460, "the application is told the MTU's MSS")
            app.ack = synAck.sequenceNumber &+ 1
            large.input(app.segment(.ack))
            let flow = try XCTUnwrap(large.delegate.accepted.last)
            let bytes = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 9) }
            let taken = bytes.withUnsafeBytes { flow.write($0) }
            XCTAssertGreaterThan(taken, 16_384)
            large.stack.flushOutput()
            let segments = large.tun.takeSegments().filter { !$0.payload.isEmpty }
            XCTAssertTrue(segments.contains { $0.payload.count > 1460 }, "\(destination): \(segments.map(\.payload.count))")
            XCTAssertTrue(segments.allSatisfy { $0.payload.count <= 8192 }, "\(segments.map(\.payload.count))")
            XCTAssertEqual(segments.flatMap(\.payload), Array(bytes[0..<segments.reduce(0) { $0 + $1.payload.count }]))
            flow.abort()
        }
    }

    /// With large segments a flow queues 1 MiB toward an application that has acknowledged nothing
    /// yet (TCPStack.sendBuffer), in the 32 KiB writes a stream's DATA frames arrive in; then no more.
    func testAFlowQueuesAMebibyteAheadOfTheApplication() throws {
        harness.stack.shutdown()
        let large = try StackHarness(mtu: 1500, largeSegments: true)
        defer { large.stack.shutdown() }
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try large.connect(&app)
        let frame = [UInt8](repeating: 0x5A, count: 32 * 1024)
        var taken = 0
        while taken < 2 << 20 {
            let n = frame.withUnsafeBytes { flow.write($0) }
            taken += n
            if n < frame.count { break }
        }
        XCTAssertEqual(taken, 1 << 20, "lwIP's send buffer of an accepted flow")
        XCTAssertEqual(flow.writableBytes, 0)
        flow.abort()
    }

    func testApplicationFINEndsInputAfterTheData() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        harness.input(app.data(Array("bye".utf8)))
        harness.input(app.segment([.fin, .ack]))
        XCTAssertEqual(delegate.handlers[app.key]?.inputCount, 2)
        XCTAssertFalse(flow.inputEnded, "bytes before the FIN are still unread")
        XCTAssertEqual(flow.read { $0.count }, 3)
        XCTAssertTrue(flow.inputEnded)
    }

    func testApplicationRSTResetsTheFlow() throws {
        for (application, destination) in [("10.0.0.2:\(freshPort())", "203.0.113.7:443"), ("[fd00::2]:\(freshPort())", "[2001:db8::7]:443")] {
            var app = Application(from: application, to: destination)
            let flow = try harness.connect(&app)
            let handler = try XCTUnwrap(delegate.handlers[app.key])
            harness.input(app.segment([.rst, .ack]))
            XCTAssertEqual(handler.resetCount, 1, destination)
            XCTAssertFalse(flow.isAlive)
            XCTAssertEqual(stack.flowCount, 0)
            XCTAssertEqual(flow.read { $0.count }, 0)
            XCTAssertEqual([1, 2, 3].withUnsafeBytes { flow.write($0) }, 0, "a dead flow takes nothing")
            flow.abort()  // harmless on a dead flow
            XCTAssertEqual(handler.resetCount, 1)
        }
    }

    func testAbortSendsRSTToTheApplication() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        tun.packets.removeAll()
        flow.abort()
        let segments = tun.takeSegments()
        XCTAssertEqual(segments.map(\.flags).filter { $0.contains(.rst) }.count, 1, "\(segments)")
        XCTAssertEqual(segments.first?.source, app.key.destination)
        XCTAssertEqual(stack.flowCount, 0)
        XCTAssertEqual(delegate.handlers[app.key]?.resetCount, 0, "our own abort is not reported back")
    }
}

/// Half-close toward the application (`shutdownOutput`), in both orders.
final class TCPFlowShutdownTests: StackTestCase {
    func testShutdownOutputSendsFINAfterTheQueuedBytes() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        XCTAssertEqual(Array("tail".utf8).withUnsafeBytes { flow.write($0) }, 4)
        flow.shutdownOutput()
        stack.flushOutput()
        let segments = tun.takeSegments()
        let bytes = segments.flatMap(\.payload)
        XCTAssertEqual(bytes, Array("tail".utf8))
        let fin = try XCTUnwrap(segments.first { $0.flags.contains(.fin) }, "\(segments)")
        XCTAssertEqual(fin.sequenceNumber &+ UInt32(fin.payload.count), app.ack &+ 4, "FIN follows the 4 bytes")
        XCTAssertEqual(flow.writableBytes, 0, "nothing more may be written")

        // The application may still send; the flow still reads.
        harness.input(app.data(Array("more".utf8)))
        XCTAssertEqual(flow.read { $0.count }, 4)
        XCTAssertTrue(flow.isAlive)
    }

    /// The application sent its data and FIN, but the flow has not read it all yet (the stream had
    /// no credit) when the relay's FIN arrives: shutting our side must not throw that data away.
    func testShutdownOutputAfterTheApplicationsFINKeepsUnreadInput() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        let upload = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        harness.input(app.data(Array(upload[0..<1400])))
        harness.input(app.data(Array(upload[1400...])))
        harness.input(app.segment([.fin, .ack]))
        app.seq &+= 1
        XCTAssertFalse(flow.inputEnded)

        var read: [UInt8] = []
        XCTAssertEqual(flow.read { chunk in read += chunk.prefix(1000); return min(1000, chunk.count) }, 1000)
        flow.shutdownOutput()
        stack.flushOutput()
        XCTAssertFalse(flow.inputEnded, "2000 bytes are still unread")
        flow.read { chunk in
            read += chunk
            return chunk.count
        }
        XCTAssertTrue(read == upload, "read \(read.count) of \(upload.count) bytes: unread input was lost when our side shut down")
        XCTAssertTrue(flow.inputEnded)

        // lwIP sent our FIN; the application acknowledges it, which ends the connection quietly.
        let sent = tun.takeSegments()
        XCTAssertFalse(sent.contains { $0.flags.contains(.rst) }, "unread input must not turn the close into a reset: \(sent)")
        let fin = try XCTUnwrap(sent.first { $0.flags.contains(.fin) }, "\(sent)")
        app.ack = fin.sequenceNumber &+ 1
        harness.input(app.segment(.ack))
        XCTAssertEqual(delegate.handlers[app.key]?.resetCount ?? 0, 0)
        flow.close()
        XCTAssertEqual(stack.flowCount, 0)
    }

    /// An application that reuses a source port sends a fresh SYN for a tuple lwIP still holds in
    /// TIME_WAIT (our FIN first, then the application's): it must be accepted, not answered with a
    /// bare ACK as lwIP does on its own (found by the benchmark at ~7,000 connections in a row).
    func testNewSYNForATupleInTimeWaitIsAccepted() throws {
        let stack = harness.stack, tun = harness.tun, delegate = harness.delegate
        let port = freshPort()
        var app = Application(from: "10.0.0.2:\(port)", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        try harness.finishOurSide(flow, &app)  // our FIN first...
        harness.input(app.segment([.fin, .ack]))  // ...then theirs: lwIP is in TIME_WAIT now
        app.seq &+= 1
        stack.flushOutput()
        tun.packets.removeAll()

        var again = Application(from: "10.0.0.2:\(port)", to: "203.0.113.7:443", isn: 9_000_000)
        harness.input(again.syn())
        XCTAssertEqual(delegate.syns.last, again.key, "the new SYN is held like any other")
        stack.admit(again.key)
        let answer = tun.takeSegments()
        XCTAssertTrue(answer.contains { $0.flags == [.syn, .ack] && $0.acknowledgmentNumber == 9_000_001 }, "\(answer)")
        XCTAssertEqual(stack.counters.timeWaitReused, 1)
    }

    /// TIME_WAIT pcbs are freed at the end of the loop turn that made them (`runTimers`), so lwIP's
    /// linearly scanned TIME_WAIT list stays empty under thousands of connections a second; a new
    /// SYN for the same tuple then needs no reuse.
    func testRunTimersFreesTimeWaitAtOnce() throws {
        let stack = harness.stack, tun = harness.tun, delegate = harness.delegate
        let port = freshPort()
        var app = Application(from: "10.0.0.2:\(port)", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        try harness.finishOurSide(flow, &app)
        harness.input(app.segment([.fin, .ack]))
        stack.flushOutput()
        XCTAssertTrue(tun.takeSegments().contains { $0.flags == [.ack] && $0.acknowledgmentNumber == app.seq &+ 1 },
                      "the final ACK goes out before the pcb is freed")
        let reapedBefore = stack.counters.timeWaitReaped
        stack.runTimers()
        XCTAssertEqual(stack.counters.timeWaitReaped, reapedBefore + 1)

        var again = Application(from: "10.0.0.2:\(port)", to: "203.0.113.7:443", isn: 7_000_000)
        harness.input(again.syn())
        XCTAssertEqual(delegate.syns.last, again.key)
        stack.admit(again.key)
        XCTAssertTrue(tun.takeSegments().contains { $0.flags == [.syn, .ack] && $0.acknowledgmentNumber == 7_000_001 })
        XCTAssertEqual(stack.counters.timeWaitReused, 0, "nothing was left in TIME_WAIT to reuse")
    }
}
