import SluiceStack
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

/// One TCP segment as the stack emitted it, checked and copied out.
struct Segment: Equatable, CustomStringConvertible {
    var source: SocketEndpoint
    var destination: SocketEndpoint
    var sequenceNumber: UInt32
    var acknowledgmentNumber: UInt32
    var flags: TCPFlags
    var window: UInt16
    var maximumSegmentSize: UInt16?
    var payload: [UInt8]

    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses an IPv4 or IPv6 packet carrying TCP; checks the IPv4 header checksum and the TCP
    /// checksum.
    init(parsing packet: [UInt8]) throws {
        self = try packet.withUnsafeBytes { bytes throws -> Segment in
            let summary = try PacketSummary(parsing: bytes, checks: .all)
            guard summary.protocol == .tcp else { throw Invalid(description: "not TCP: \(summary.protocol)") }
            guard summary.length == bytes.count else { throw Invalid(description: "trailing bytes after the IP packet") }
            let tcp = try TCPSegment(validating: UnsafeRawBufferPointer(rebasing: bytes[summary.transportOffset..<summary.length]))
            return Segment(
                source: summary.source, destination: summary.destination, sequenceNumber: tcp.sequenceNumber,
                acknowledgmentNumber: tcp.acknowledgmentNumber, flags: tcp.flags, window: tcp.window,
                maximumSegmentSize: tcp.maximumSegmentSize, payload: Array(tcp.payload))
        }
    }

    init(
        source: SocketEndpoint, destination: SocketEndpoint, sequenceNumber: UInt32, acknowledgmentNumber: UInt32,
        flags: TCPFlags, window: UInt16, maximumSegmentSize: UInt16?, payload: [UInt8]
    ) {
        self.source = source
        self.destination = destination
        self.sequenceNumber = sequenceNumber
        self.acknowledgmentNumber = acknowledgmentNumber
        self.flags = flags
        self.window = window
        self.maximumSegmentSize = maximumSegmentSize
        self.payload = payload
    }

    var description: String {
        "\(source) -> \(destination) \(flags) seq \(sequenceNumber) ack \(acknowledgmentNumber) len \(payload.count)"
    }
}

/// Builds one IP packet carrying a TCP segment, checksums included, with SluiceWire's emitters.
func tcpPacket(
    from source: SocketEndpoint, to destination: SocketEndpoint, seq: UInt32, ack: UInt32 = 0, flags: TCPFlags,
    window: UInt16 = 65535, mss: UInt16? = nil, payload: [UInt8] = []
) -> [UInt8] {
    let tcp = TCPHeader(
        sourcePort: source.port, destinationPort: destination.port, sequenceNumber: seq, acknowledgmentNumber: ack,
        flags: flags, window: window, maximumSegmentSize: mss)
    let ipLength = source.address.isIPv4 ? IPv4Header.length : IPv6Header.length
    let segmentLength = tcp.length + payload.count
    var packet = [UInt8](repeating: 0, count: ipLength + segmentLength)
    packet.withUnsafeMutableBytes { buffer in
        if source.address.isIPv4 {
            IPv4Header(source: source.address, destination: destination.address, protocol: .tcp, payloadLength: segmentLength)
                .emit(into: buffer)
        } else {
            IPv6Header(source: source.address, destination: destination.address, nextHeader: .tcp, payloadLength: segmentLength)
                .emit(into: buffer)
        }
        let segment = UnsafeMutableRawBufferPointer(rebasing: buffer[ipLength...])
        UnsafeMutableRawBufferPointer(rebasing: segment[tcp.length...]).copyBytes(from: payload)
        tcp.emit(into: segment, source: source.address, destination: destination.address)
    }
    return packet
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
