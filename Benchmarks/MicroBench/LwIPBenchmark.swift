import CSluiceShims
import SluiceStack
import SluiceWire

/// The lwIP path fed from an in-memory packet flow, on one core: one `TCPStack` (lwIP, accept-any)
/// whose TUN is this file. An application side written here does the TCP handshake with lwIP, then
///
/// - upload: streams data segments into `TCPStack.input` — 1460-byte segments (a TUN without
///   offloads) or 65,495-byte super-segments (with offloads, one read brings a 64 KiB TSO packet) —
///   within the window lwIP announces; the flow handler reads and discards (`TCPFlow.read`, which
///   opens lwIP's window), lwIP's ACKs come out of the stack's output;
/// - download: the flow handler writes 32 KiB chunks (one DATA frame each) with `TCPFlow.write`
///   whenever lwIP has room; lwIP's 1460-byte segments come out of the output and the application
///   acknowledges every 2 segments (a receiver without GRO) or every 44 (~64 KiB: what it sees when
///   the client's `SegmentCoalescer` hands the kernel one super-packet).
///
/// Each turn ends as the client's loop turn does: `runTimers()`, `flushOutput()`. The application's
/// own work is kept small (templates patched with incremental checksums, fixed-offset parsing), so
/// the figures are the stack's: Sluice's `TCPStack`/`TCPFlow` plus lwIP, with lwIP's checksum
/// resolved to CSluiceShims' routine as in sluice. lwIP's state is global: one stack per run, used
/// only by this thread; each row is a new connection on a new port.
enum LwIPBenchmark {
    struct Result { let name: String; let segmentBytes: Int; let gbps: Double; let segments: Double; let turns: Double }

    static let application = IPAddress("10.0.0.2")!
    static let destination = SocketEndpoint("203.0.113.7:443")!

    static func run() {
        if sluice_checksum_self_test() == 0 { print("note: the fast checksum disagreed with lwIP's; lwIP uses the reference") }
        let bench = StackBench()
        var results: [Result] = []
        results.append(bench.upload(segmentPayload: 1460, port: 40001))
        results.append(bench.upload(segmentPayload: 65535 - 40, port: 40002))
        results.append(bench.download(ackEvery: 2, port: 40003))
        results.append(bench.download(ackEvery: 44, port: 40004))
        bench.stack.shutdown()
        Bench.printTable(
            ["lwIP, IPv4", "segment bytes", "GB/s", "segments/s", "turns/s"],
            results.map { [$0.name, String($0.segmentBytes), Bench.format($0.gbps), Bench.format($0.segments, decimals: 0),
                           Bench.format($0.turns, decimals: 0)] })
        Bench.printJSON("lwip", results.map {
            [("direction", Bench.quoted($0.name)), ("segment_bytes", String($0.segmentBytes)), ("gbps", Bench.format($0.gbps)),
             ("segments_per_second", Bench.format($0.segments, decimals: 0)),
             ("turns_per_second", Bench.format($0.turns, decimals: 0))]
        })
    }

    /// The stack, its delegate and the application currently connected.
    final class StackBench: TCPStackDelegate, TCPFlowHandler {
        private(set) var stack: TCPStack!
        /// The connection the stack's output goes to.
        var app: Application?
        private var heldSYN: FlowKey?
        private var flow: TCPFlow?
        /// Bytes the flow handler read (upload) or lwIP accepted from it (download).
        private var read = 0, written = 0
        private var writing = false
        private let chunk = [UInt8](repeating: 0x5a, count: 32 * 1024)

        init() {
            // `[unowned self]` and a weak delegate, as TunnelClient has: the same reference-counting costs.
            stack = try! TCPStack(mtu: 1500) { [unowned self] packet in self.app!.receive(packet) }
            stack.delegate = self
        }

        // MARK: rows

        func upload(segmentPayload: Int, port: UInt16) -> Result {
            let app = connect(port: port, segmentPayload: segmentPayload)
            var turns = 0, start = (turns: 0, segments: 0, bytes: 0)
            let rate = Bench.rate(timing: { start = (turns, app.segmentsSent, read) }) {
                let before = read
                for _ in 0..<16 {
                    app.sendData(maximumSegments: 16)
                    endTurn()
                    turns += 1
                }
                return read - before
            }
            let name = segmentPayload == 1460 ? "upload, 1460 B segments" : "upload, 64 KiB segments"
            return finish(name, segmentPayload, rate, bytes: read - start.bytes, segments: app.segmentsSent - start.segments,
                          turns: turns - start.turns)
        }

        func download(ackEvery: Int, port: UInt16) -> Result {
            let app = connect(port: port, segmentPayload: 0)
            app.ackEvery = ackEvery
            writing = true
            var turns = 0, start = (turns: 0, segments: 0, bytes: 0)
            let rate = Bench.rate(timing: { start = (turns, app.segmentsReceived, app.bytesReceived) }) {
                let before = app.bytesReceived
                for _ in 0..<16 {
                    fill()
                    endTurn()
                    app.sendACKs()
                    turns += 1
                }
                return app.bytesReceived - before
            }
            writing = false
            precondition(app.bytesReceived <= written, "received more than was written")
            return finish("download, ACK every \(ackEvery)", 1460, rate, bytes: app.bytesReceived - start.bytes,
                          segments: app.segmentsReceived - start.segments, turns: turns - start.turns)
        }

        /// Ends the connection (RST) and turns the timed counts into rates.
        private func finish(_ name: String, _ segmentBytes: Int, _ rate: Double, bytes: Int, segments: Int, turns: Int) -> Result {
            precondition(rate > 0 && bytes > 0, "\(name): no bytes moved")
            let seconds = Double(bytes) / rate
            flow?.abort()
            flow = nil
            app = nil
            stack.runTimers()
            return Result(name: name, segmentBytes: segmentBytes, gbps: rate / 1e9, segments: Double(segments) / seconds,
                          turns: Double(turns) / seconds)
        }

        /// The end of a loop turn in the client.
        private func endTurn() {
            stack.runTimers()
            stack.flushOutput()
        }

        /// SYN (MSS 1460, window scale 7), admit, SYN-ACK, ACK: returns the connected application.
        private func connect(port: UInt16, segmentPayload: Int) -> Application {
            read = 0
            written = 0
            let app = Application(from: SocketEndpoint(address: LwIPBenchmark.application, port: port),
                                  to: LwIPBenchmark.destination, segmentPayload: segmentPayload, stack: stack)
            self.app = app
            app.sendSYN()
            guard let key = heldSYN else { fatalError("the stack did not report the SYN") }
            heldSYN = nil
            stack.admit(key)
            app.sendHandshakeACK()
            precondition(flow != nil && app.connected, "no connection")
            return app
        }

        /// The download's source: writes whole chunks while lwIP has room (as `FlowBridge` drains DATA).
        private func fill() {
            guard writing, let flow else { return }
            chunk.withUnsafeBytes { bytes in
                while true {
                    let n = flow.write(bytes)
                    written += n
                    if n < bytes.count { return }
                }
            }
        }

        // MARK: TCPStackDelegate, TCPFlowHandler

        func stack(_ stack: TCPStack, didReceiveSYNFor key: FlowKey) { heldSYN = key }
        func stack(_ stack: TCPStack, didAbandon key: FlowKey) {}
        func stack(_ stack: TCPStack, didAccept flow: TCPFlow) {
            self.flow = flow
            flow.handler = self
        }

        func flowHasInput(_ flow: TCPFlow) { read += flow.read { $0.count } }
        func flowCanWrite(_ flow: TCPFlow) { fill() }
        func flowDidReset(_ flow: TCPFlow) { fatalError("lwIP reset the connection") }
    }

    /// The application's end of one IPv4 connection, as its kernel would behave: sequence numbers,
    /// lwIP's window, ACKs. Packets are prebuilt and patched with incremental checksum updates.
    final class Application {
        let key: FlowKey
        /// Strong: a weak reference would give the stack a side table and slow every retain of it,
        /// which sluice does not pay (its flows hold the stack `unowned`).
        private let stack: TCPStack
        /// Our next sequence number, and what we acknowledge of lwIP's.
        private var seq: UInt32 = 1_000_000, ack: UInt32 = 0
        /// The highest ACK from lwIP and the window it announced (scaled).
        private var peerAck: UInt32 = 0, peerWindow = 0, peerScale = 0
        private(set) var connected = false
        private let segmentPayload: Int
        private var data: Template
        private var pureACK: Template
        private(set) var segmentsSent = 0
        // download
        var ackEvery = 2
        private(set) var bytesReceived = 0, segmentsReceived = 0
        private var unacknowledgedSegments = 0
        /// Acknowledgment numbers due, in order, and the ones being sent (two lists swapped each turn).
        private var dueACKs: [UInt32] = [], sendingACKs: [UInt32] = []
        static let scale: UInt8 = 7

        init(from source: SocketEndpoint, to destination: SocketEndpoint, segmentPayload: Int, stack: TCPStack) {
            self.stack = stack
            key = FlowKey(application: source, destination: destination)
            self.segmentPayload = segmentPayload
            data = Template(from: source, to: destination, payload: segmentPayload)
            pureACK = Template(from: source, to: destination, payload: 0)
        }

        func sendSYN() {
            let syn = TCPHeader(sourcePort: key.application.port, destinationPort: key.destination.port, sequenceNumber: seq,
                                acknowledgmentNumber: 0, flags: .syn, window: 65535, maximumSegmentSize: 1460,
                                windowScale: Application.scale)
            var packet = [UInt8](repeating: 0, count: IPv4Header.length + syn.length)
            packet.withUnsafeMutableBytes { buffer in
                IPv4Header(source: key.application.address, destination: key.destination.address, protocol: .tcp,
                           payloadLength: syn.length).emit(into: buffer)
                syn.emit(into: UnsafeMutableRawBufferPointer(rebasing: buffer[IPv4Header.length...]),
                         source: key.application.address, destination: key.destination.address)
            }
            seq &+= 1
            packet.withUnsafeBytes { stack.input($0) }
        }

        func sendHandshakeACK() {
            precondition(ack != 0, "no SYN-ACK from lwIP")
            sendPureACK()
            connected = true
        }

        /// Sends up to `maximumSegments` data segments (a TUN read batch), as far as lwIP's window lets.
        func sendData(maximumSegments: Int) {
            for _ in 0..<maximumSegments {
                let room = Int(Int32(bitPattern: peerAck &+ UInt32(peerWindow) &- seq))
                if room < segmentPayload { return }  // wait for lwIP's window update
                data.set(sequence: seq, acknowledgment: ack)
                seq &+= UInt32(segmentPayload)
                segmentsSent += 1
                data.bytes.withUnsafeBytes { stack.input($0) }
            }
        }

        /// Sends the ACKs that became due during this turn, each acknowledging what had arrived when it
        /// did: one per `ackEvery` in-order segments, and one for a remainder (the receiver's delayed
        /// ACK, or the end of a GRO batch). Segments lwIP sends in answer are acknowledged next turn.
        func sendACKs() {
            if unacknowledgedSegments > 0 { dueACKs.append(ack) }
            unacknowledgedSegments = 0
            swap(&dueACKs, &sendingACKs)
            for number in sendingACKs { sendPureACK(acknowledging: number) }
            sendingACKs.removeAll(keepingCapacity: true)
        }

        private func sendPureACK(acknowledging number: UInt32? = nil) {
            pureACK.set(sequence: seq, acknowledgment: number ?? ack)
            pureACK.bytes.withUnsafeBytes { stack.input($0) }
        }

        /// One packet from lwIP (called from inside the stack: nothing may be fed back from here).
        func receive(_ packet: UnsafeRawBufferPointer) {
            let ip = Int(packet[0] & 0x0F) * 4
            precondition(packet[0] >> 4 == 4 && packet[9] == 6, "lwIP sent something other than IPv4/TCP")
            let tcp = UnsafeRawBufferPointer(rebasing: packet[ip...])
            let flags = TCPFlags(rawValue: tcp[13])
            let payload = tcp.count - Int(tcp[12] >> 4) * 4
            let sequence = tcp.readU32(at: 4)
            if flags.contains(.syn) {
                // The SYN-ACK: lwIP's sequence start and its window scale.
                let segment = try! TCPSegment(validating: tcp)
                ack = sequence &+ 1
                peerScale = Int(segment.windowScale ?? 0)
            }
            if flags.contains(.rst) { return }
            if flags.contains(.ack) {
                let acknowledged = tcp.readU32(at: 8)
                if Int32(bitPattern: acknowledged &- peerAck) >= 0 || peerAck == 0 { peerAck = acknowledged }
                peerWindow = Int(tcp.readU16(at: 14)) << (flags.contains(.syn) ? 0 : peerScale)
            }
            guard payload > 0 else { return }
            precondition(sequence == ack, "lwIP sent out of order: \(sequence), expected \(ack)")
            ack &+= UInt32(payload)
            bytesReceived += payload
            segmentsReceived += 1
            unacknowledgedSegments += 1
            if unacknowledgedSegments >= ackEvery {
                unacknowledgedSegments = 0
                dueACKs.append(ack)
            }
        }
    }

    /// One prebuilt IPv4/TCP packet (ACK, window 65535 << 7) whose sequence and acknowledgment
    /// numbers are changed in place with RFC 1624 checksum updates.
    struct Template {
        var bytes: [UInt8]
        private var sequence: UInt32 = 0, acknowledgment: UInt32 = 0

        init(from source: SocketEndpoint, to destination: SocketEndpoint, payload: Int) {
            let tcp = TCPHeader(sourcePort: source.port, destinationPort: destination.port, sequenceNumber: 0,
                                acknowledgmentNumber: 0, flags: payload > 0 ? [.ack, .psh] : .ack, window: 65535)
            bytes = [UInt8](repeating: 0, count: IPv4Header.length + tcp.length + payload)
            bytes.withUnsafeMutableBytes { buffer in
                IPv4Header(source: source.address, destination: destination.address, protocol: .tcp,
                           payloadLength: tcp.length + payload).emit(into: buffer)
                let segment = UnsafeMutableRawBufferPointer(rebasing: buffer[IPv4Header.length...])
                for i in tcp.length..<segment.count { segment[i] = UInt8(truncatingIfNeeded: i &* 7) }
                tcp.emit(into: segment, source: source.address, destination: destination.address)
            }
        }

        mutating func set(sequence newSequence: UInt32, acknowledgment newAcknowledgment: UInt32) {
            let (oldSequence, oldAcknowledgment) = (sequence, acknowledgment)
            bytes.withUnsafeMutableBytes { buffer in
                let tcp = UnsafeMutableRawBufferPointer(rebasing: buffer[IPv4Header.length...])
                var checksum = UnsafeRawBufferPointer(tcp).readU16(at: 16)
                checksum = Checksum.update(checksum, old: oldSequence, new: newSequence)
                checksum = Checksum.update(checksum, old: oldAcknowledgment, new: newAcknowledgment)
                tcp.writeU32(newSequence, at: 4)
                tcp.writeU32(newAcknowledgment, at: 8)
                tcp.writeU16(checksum, at: 16)
            }
            (sequence, acknowledgment) = (newSequence, newAcknowledgment)
        }
    }
}
