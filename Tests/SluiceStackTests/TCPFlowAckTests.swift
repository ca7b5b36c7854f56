import SluiceStack
import SluiceTestSupport
import SluiceWire
import XCTest

/// When the stack acknowledges what the application sent, and what its ACKs announce. A loop turn
/// is played out as the client does it: packets in (`input`), the flow's handler reading, then
/// `flushOutput` at the end of the turn.
final class TCPFlowAckTests: StackTestCase {
    /// The ACKs among what the stack emitted: no payload, acknowledging `ack`.
    private func acks(of ack: UInt32) -> [Segment] {
        tun.takeSegments().filter { $0.payload.isEmpty && $0.flags == .ack && $0.acknowledgmentNumber == ack }
    }

    /// An application writing twice with Nagle on sends its second write only once the first is
    /// acknowledged. lwIP would leave a lone segment to its 250 ms delayed-ACK timer, past the 200 ms
    /// after which the application's kernel retransmits: the end of the turn acknowledges it.
    func testALoneSegmentIsAcknowledgedByTheEndOfTheTurn() throws {
        for (application, destination) in [("10.0.0.2:\(freshPort())", "203.0.113.7:443"), ("[fd00::2]:\(freshPort())", "[2001:db8::7]:443")] {
            var app = Application(from: application, to: destination)
            let flow = try harness.connect(&app)
            _ = tun.take()
            harness.input(app.data([UInt8](repeating: 0x71, count: 100)))
            XCTAssertEqual(flow.read { $0.count }, 100)
            stack.flushOutput()
            let sent = acks(of: app.seq)
            XCTAssertEqual(sent.count, 1, "\(destination): one ACK at the end of the turn, got \(sent)")
            XCTAssertEqual(sent.first?.destination, app.key.application)
            flow.abort()
        }
    }

    /// Bytes the flow could not pass on yet (the stream had no credit) are acknowledged all the
    /// same, as a kernel acknowledges what sits in its receive buffer, with the smaller window.
    func testUnreadBytesAreAcknowledgedWithASmallerWindow() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        _ = try harness.connect(&app)
        _ = tun.take()
        harness.input(app.data([UInt8](repeating: 0x72, count: 1000)))
        stack.flushOutput()
        let sent = acks(of: app.seq)
        XCTAssertEqual(sent.count, 1, "\(sent)")
        XCTAssertEqual(sent.first?.window, 65535 - 1000, "the unread bytes still take their room")
    }

    /// Reading a super-segment (as TUN offloads deliver them) must not make lwIP ACK from inside the
    /// read: the window opens once, in `flushOutput`, with one ACK. An ACK per read put the
    /// application's next transmission inside our TUN write and cost 40 % of upload throughput.
    func testReadOpensTheWindowOncePerTurnNotDuringTheRead() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        _ = tun.takeSegments()
        harness.input(app.data([UInt8](repeating: 7, count: 30_000)))
        XCTAssertEqual(flow.read { $0.count }, 30_000)
        XCTAssertEqual(tun.takeSegments().filter { $0.acknowledgmentNumber == app.seq }, [],
                       "no ACK while the turn still reads")
        stack.flushOutput()
        let sent = acks(of: app.seq)
        XCTAssertEqual(sent.count, 1, "one ACK at the end of the turn")
        XCTAssertGreaterThanOrEqual(sent.first?.window ?? 0, 60_000, "with the window open again")
    }

    /// lwIP acknowledges every second segment from inside its input; a turn that brings several
    /// super-segments of an upload answers them with one ACK at its end instead.
    func testSegmentsOfOneTurnGetOneACK() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        _ = tun.take()
        for _ in 0..<4 {
            harness.input(app.data([UInt8](repeating: 0x73, count: 16_000)))
            XCTAssertEqual(flow.read { $0.count }, 16_000)
        }
        XCTAssertEqual(tun.takeSegments(), [], "no ACK while the turn still reads")
        stack.flushOutput()
        let sent = tun.takeSegments()
        XCTAssertEqual(sent.count, 1, "one ACK for 64,000 bytes, not one per segment: \(sent)")
        XCTAssertEqual(sent.first?.acknowledgmentNumber, app.seq)
        XCTAssertGreaterThanOrEqual(sent.first?.window ?? 0, 60_000)
    }

    /// The window closed while the relay's credit was out; credit comes back in a later turn and
    /// the flow reads less than lwIP's update threshold (4 MSS). lwIP would announce that only with
    /// the next segment it sends anyway — while the application, facing a zero window, waits for its
    /// persist timer (200 ms and more). The end of the turn announces it.
    func testAWindowReopenedInALaterTurnIsAnnouncedAtItsEnd() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        _ = tun.take()
        for _ in 0..<4 { harness.input(app.data([UInt8](repeating: 0x74, count: 16_000))) }
        harness.input(app.data([UInt8](repeating: 0x74, count: 1535)))
        stack.flushOutput()
        XCTAssertEqual(acks(of: app.seq).last?.window, 0, "the application filled the window")

        // A later turn: the stream has 3,000 bytes of credit again.
        var budget = 3000
        XCTAssertEqual(flow.read { chunk in
            let n = min(budget, chunk.count)
            budget -= n
            return n
        }, 3000)
        stack.flushOutput()
        let update = acks(of: app.seq)
        XCTAssertEqual(update.count, 1, "a window update at the end of the turn: \(update)")
        XCTAssertEqual(update.first?.window, 3000)
        stack.flushOutput()
        XCTAssertEqual(tun.takeSegments(), [], "and only once")
    }

    /// The application's FIN is acknowledged from inside lwIP's input, at once, not at the end of
    /// the turn: when our FIN went first, the connection enters TIME_WAIT there, and `runTimers`
    /// frees TIME_WAIT pcbs — an ACK still owed then would never go out.
    func testTheApplicationsFINIsAcknowledgedAtOnce() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let flow = try harness.connect(&app)
        try harness.finishOurSide(flow, &app)
        harness.input(app.segment(.ack))

        // Data and FIN in one segment, as an application that writes and closes sends them.
        let last = Array("last words".utf8)
        harness.input(app.segment([.fin, .psh, .ack], payload: last))
        app.seq &+= UInt32(last.count) + 1
        XCTAssertEqual(acks(of: app.seq).count, 1, "the FIN is acknowledged inside the input")
        XCTAssertEqual(flow.read { $0.count }, last.count)
        XCTAssertTrue(flow.inputEnded)
        stack.flushOutput()
        stack.runTimers()
        XCTAssertEqual(tun.takeSegments().filter { $0.flags.contains(.rst) }, [])
    }
}
