import SluiceStack
import SluiceTestSupport
import SluiceWire
import XCTest

/// The TUN side of a `TCPStack`, in memory: every packet lwIP emits lands in `packets`.
final class FakeTUN {
    var packets: [[UInt8]] = []

    /// Removes and returns what was emitted so far.
    func take() -> [[UInt8]] {
        defer { packets.removeAll() }
        return packets
    }

    /// Removes and returns the emitted TCP segments, parsed; fails the test on anything that does
    /// not parse or whose checksums do not verify.
    func takeSegments(file: StaticString = #filePath, line: UInt = #line) -> [Segment] {
        take().compactMap { packet in
            do {
                return try Segment(parsing: packet)
            } catch {
                XCTFail("stack emitted a packet that does not parse: \(error)", file: file, line: line)
                return nil
            }
        }
    }
}

/// Records what the stack asks and hands over; `admitAll` admits every SYN at once.
final class RecordingStackDelegate: TCPStackDelegate {
    var syns: [FlowKey] = []
    var abandoned: [FlowKey] = []
    var accepted: [TCPFlow] = []
    /// Set on every accepted flow before `didAccept` returns.
    var makeHandler: () -> RecordingFlowHandler = { RecordingFlowHandler() }
    var handlers: [FlowKey: RecordingFlowHandler] = [:]

    func stack(_ stack: TCPStack, didReceiveSYNFor key: FlowKey) { syns.append(key) }
    func stack(_ stack: TCPStack, didAbandon key: FlowKey) { abandoned.append(key) }
    func stack(_ stack: TCPStack, didAccept flow: TCPFlow) {
        accepted.append(flow)
        let handler = makeHandler()
        flow.handler = handler
        handlers[flow.key] = handler
    }
}

/// Counts a flow's callbacks.
final class RecordingFlowHandler: TCPFlowHandler {
    var inputCount = 0
    var canWriteCount = 0
    var resetCount = 0

    func flowHasInput(_ flow: TCPFlow) { inputCount += 1 }
    func flowCanWrite(_ flow: TCPFlow) { canWriteCount += 1 }
    func flowDidReset(_ flow: TCPFlow) { resetCount += 1 }
}

/// The application's side of one TCP connection through the stack: it keeps its own sequence
/// numbers and builds the segments an application's kernel would send.
struct Application {
    let key: FlowKey
    /// Our next sequence number.
    var seq: UInt32
    /// The next sequence number we expect from the stack (set from its SYN-ACK).
    var ack: UInt32 = 0

    init(from application: String, to destination: String, isn: UInt32 = 1_000_000) {
        key = FlowKey(application: SocketEndpoint(application)!, destination: SocketEndpoint(destination)!)
        seq = isn
    }

    func segment(_ flags: TCPFlags, payload: [UInt8] = [], mss: UInt16? = nil) -> [UInt8] {
        tcpPacket(
            from: key.application, to: key.destination, seq: seq, ack: flags.contains(.ack) ? ack : 0, flags: flags,
            mss: mss, payload: payload)
    }

    /// The SYN, with an MSS option as a real stack sends one. Moves `seq` past it.
    mutating func syn() -> [UInt8] {
        defer { seq &+= 1 }
        return segment(.syn, mss: 1460)
    }

    /// Data (PSH|ACK); moves `seq` past it.
    mutating func data(_ bytes: [UInt8]) -> [UInt8] {
        defer { seq &+= UInt32(bytes.count) }
        return segment([.psh, .ack], payload: bytes)
    }
}

/// A stack with a fake TUN and a recording delegate. Only one may exist at a time (lwIP's state is
/// global); `StackTestCase` shuts it down after each test.
final class StackHarness {
    let tun = FakeTUN()
    let delegate = RecordingStackDelegate()
    let stack: TCPStack

    init(mtu: Int = 1500, largeSegments: Bool = false) throws {
        let tun = self.tun
        stack = try TCPStack(mtu: mtu, largeSegments: largeSegments) { packet in tun.packets.append(Array(packet)) }
        stack.delegate = delegate
    }

    func input(_ packet: [UInt8]) {
        packet.withUnsafeBytes { stack.input($0) }
    }

    /// SYN, admit, SYN-ACK, ACK: returns the accepted flow, with `app.ack` set from the SYN-ACK.
    func connect(_ app: inout Application, file: StaticString = #filePath, line: UInt = #line) throws -> TCPFlow {
        input(app.syn())
        XCTAssertEqual(delegate.syns.last, app.key, "SYN not reported", file: file, line: line)
        stack.admit(app.key)
        let synAck = try XCTUnwrap(tun.takeSegments(file: file, line: line).first { $0.flags == [.syn, .ack] }, file: file, line: line)
        app.ack = synAck.sequenceNumber &+ 1
        input(app.segment(.ack))
        let flow = try XCTUnwrap(delegate.accepted.last, "no flow accepted", file: file, line: line)
        XCTAssertEqual(flow.key, app.key, file: file, line: line)
        return flow
    }

    /// Our side of `flow` sends its FIN (`shutdownOutput`, then the end of the turn); `app.ack` moves
    /// past it, so the application's next segment acknowledges it.
    func finishOurSide(_ flow: TCPFlow, _ app: inout Application, file: StaticString = #filePath, line: UInt = #line) throws {
        flow.shutdownOutput()
        stack.flushOutput()
        let fin = try XCTUnwrap(tun.takeSegments(file: file, line: line).first { $0.flags.contains(.fin) }, "no FIN",
                                file: file, line: line)
        app.ack = fin.sequenceNumber &+ 1
    }
}

/// Creates a `StackHarness` per test and always shuts its stack down, so the next test can make one.
class StackTestCase: XCTestCase {
    private(set) var harness: StackHarness!

    /// A fresh application port per connection across the whole run: pcbs of earlier tests may
    /// linger in lwIP's global lists (TIME_WAIT, closing), and must never match a new connection.
    nonisolated(unsafe) private static var nextPort: UInt16 = 40_000
    func freshPort() -> UInt16 {
        Self.nextPort &+= 1
        return Self.nextPort
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        harness = try StackHarness()
    }

    override func tearDown() {
        harness?.stack.shutdown()
        harness = nil
        super.tearDown()
    }

    var tun: FakeTUN { harness.tun }
    var stack: TCPStack { harness.stack }
    var delegate: RecordingStackDelegate { harness.delegate }
}
