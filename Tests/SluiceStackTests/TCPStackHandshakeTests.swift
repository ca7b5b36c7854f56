import SluiceStack
import SluiceWire
import XCTest

/// Held SYNs, admit and refuse, accept-any (docs/protocol.md §4.1–2).
final class TCPStackHandshakeTests: StackTestCase {
    /// Application → destination pairs, one per family.
    func families() -> [(application: String, destination: String)] {
        [("10.0.0.2:\(freshPort())", "203.0.113.7:443"), ("[fd00::2]:\(freshPort())", "[2001:db8::7]:443")]
    }

    func testSYNIsHeldThenAdmitAnswersItAndTheHandshakeAcceptsTheFlow() throws {
        for (application, destination) in families() {
            var app = Application(from: application, to: destination, isn: 0xFFFF_FFF0)  // ack wraps past 2^32
            harness.input(app.syn())
            XCTAssertEqual(delegate.syns, [app.key], destination)
            XCTAssertEqual(tun.take(), [], "the SYN is held: nothing answers it yet (\(destination))")
            XCTAssertEqual(stack.flowCount, 0)

            stack.admit(app.key)
            let segments = tun.takeSegments()
            XCTAssertEqual(segments.count, 1, "\(segments)")
            let synAck = try XCTUnwrap(segments.first)
            XCTAssertEqual(synAck.flags, [.syn, .ack])
            XCTAssertEqual(synAck.source, app.key.destination, "the SYN-ACK comes from the dialled destination")
            XCTAssertEqual(synAck.destination, app.key.application)
            XCTAssertEqual(synAck.acknowledgmentNumber, 0xFFFF_FFF1, "ack = seq + 1")
            XCTAssertNotNil(synAck.maximumSegmentSize)
            XCTAssertEqual(delegate.accepted.count, 0, "not accepted before the handshake completes")

            app.ack = synAck.sequenceNumber &+ 1
            harness.input(app.segment(.ack))
            XCTAssertEqual(delegate.accepted.count, 1, destination)
            let flow = try XCTUnwrap(delegate.accepted.first)
            XCTAssertEqual(flow.key, app.key)
            XCTAssertTrue(flow.isAlive)
            XCTAssertEqual(stack.flowCount, 1)
            XCTAssertEqual(tun.take(), [], "the final ACK needs no answer")
            XCTAssertEqual(delegate.syns.count, 1, "one SYN, one decision")

            flow.abort()
            tun.packets.removeAll()
            delegate.syns.removeAll()
            delegate.accepted.removeAll()
        }
    }

    func testRefuseAnswersTheHeldSYNWithRSTAndNeverASynAck() throws {
        for (application, destination) in families() {
            var app = Application(from: application, to: destination, isn: 77_777)
            harness.input(app.syn())
            XCTAssertEqual(tun.take(), [])
            let resetsBefore = stack.counters.resetsSent

            stack.refuse(app.key)
            let segments = tun.takeSegments()
            XCTAssertEqual(segments.count, 1, "\(segments)")
            let rst = try XCTUnwrap(segments.first)
            XCTAssertEqual(rst.flags, [.rst, .ack])
            XCTAssertEqual(rst.acknowledgmentNumber, 77_778, "ack = seq + 1")
            XCTAssertEqual(rst.source, app.key.destination)
            XCTAssertEqual(rst.destination, app.key.application)
            XCTAssertEqual(stack.counters.resetsSent, resetsBefore + 1)

            // The decision is final: admitting now, or a retransmitted SYN, answers nothing.
            stack.admit(app.key)
            XCTAssertEqual(tun.take(), [], "no SYN-ACK after refuse")
            stack.refuse(app.key)
            XCTAssertEqual(tun.take(), [], "refusing twice sends one RST")
            XCTAssertEqual(stack.flowCount, 0)
            XCTAssertEqual(delegate.accepted.count, 0)
        }
    }

    func testRetransmittedSYNIsHeldOnceAndReportedOnce() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let syn = app.syn()
        harness.input(syn)
        harness.input(syn)
        XCTAssertEqual(delegate.syns, [app.key])
        XCTAssertEqual(tun.take(), [])
        stack.admit(app.key)
        XCTAssertEqual(tun.takeSegments().filter { $0.flags == [.syn, .ack] }.count, 1)
    }

    func testApplicationRSTOnAHeldSYNAbandonsIt() throws {
        var app = Application(from: "[fd00::2]:\(freshPort())", to: "[2001:db8::7]:8080")
        harness.input(app.syn())
        harness.input(app.segment(.rst))
        XCTAssertEqual(delegate.abandoned, [app.key])
        stack.admit(app.key)
        XCTAssertEqual(tun.take(), [], "an abandoned SYN is not answered")
    }

    /// Accept-any with two flows at once: each pcb keeps its own destination as the source of its
    /// segments, though the netif's address follows whichever packet came in last.
    func testTwoFlowsToDifferentDestinationsEachKeepTheirOwnSource() throws {
        var a = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443", isn: 1000)
        var b = Application(from: "10.0.0.2:\(freshPort())", to: "198.51.100.9:80", isn: 5000)
        var c = Application(from: "[fd00::2]:\(freshPort())", to: "[2001:db8::7]:443", isn: 9000)

        // Interleaved: every SYN first, then every admit, then every ACK.
        for syn in [a.syn(), b.syn(), c.syn()] { harness.input(syn) }
        XCTAssertEqual(delegate.syns, [a.key, b.key, c.key])
        XCTAssertEqual(tun.take(), [])
        for key in [a.key, b.key, c.key] { stack.admit(key) }
        let synAcks = tun.takeSegments()
        XCTAssertEqual(synAcks.map(\.source), [a.key.destination, b.key.destination, c.key.destination])
        XCTAssertEqual(synAcks.map(\.acknowledgmentNumber), [1001, 5001, 9001])
        a.ack = synAcks[0].sequenceNumber &+ 1
        b.ack = synAcks[1].sequenceNumber &+ 1
        c.ack = synAcks[2].sequenceNumber &+ 1
        for ack in [a.segment(.ack), b.segment(.ack), c.segment(.ack)] { harness.input(ack) }
        XCTAssertEqual(delegate.accepted.map(\.key), [a.key, b.key, c.key])
        XCTAssertEqual(stack.flowCount, 3)

        // All three write after the last input (c's ACK set the netif to c's destination).
        for (index, flow) in delegate.accepted.enumerated() {
            let text = Array("flow \(index)".utf8)
            XCTAssertEqual(text.withUnsafeBytes { flow.write($0) }, text.count)
        }
        stack.flushOutput()
        let data = tun.takeSegments().filter { !$0.payload.isEmpty }
        XCTAssertEqual(data.count, 3, "\(data)")
        for (index, app) in [a, b, c].enumerated() {
            let segment = data.first { $0.destination == app.key.application }
            XCTAssertEqual(segment?.source, app.key.destination, "flow \(index) sent from the wrong address")
            XCTAssertEqual(segment?.payload, Array("flow \(index)".utf8))
            XCTAssertEqual(segment?.acknowledgmentNumber, app.seq)
        }
    }

    func testSYNForAnAdmittedButUnfinishedHandshakeIsNotHeldAgain() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let syn = app.syn()
        harness.input(syn)
        stack.admit(app.key)
        XCTAssertEqual(tun.takeSegments().count, 1)
        // The application did not get the SYN-ACK and retransmits: lwIP answers it, no new decision.
        harness.input(syn)
        XCTAssertEqual(delegate.syns.count, 1)
        let again = tun.takeSegments()
        XCTAssertTrue(again.allSatisfy { $0.flags.contains(.ack) && $0.source == app.key.destination }, "\(again)")
    }
}
