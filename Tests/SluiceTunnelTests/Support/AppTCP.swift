import SluiceTestSupport
import SluiceWire

/// The application's end of one TCP connection through the engine, written for tests: the
/// segments an application's kernel would send — SYN with an MSS, data within the window the engine
/// announces, an ACK for everything received, FIN — as raw IP packets. The in-memory packet flow
/// loses and reorders nothing, so there is no retransmission. Loop-confined.
final class AppTCP {
    enum State: Equatable { case synSent, established, closed }

    let local: SocketEndpoint
    let remote: SocketEndpoint
    private let inject: ([UInt8]) -> Void
    private(set) var state = State.synSent
    /// The engine answered the SYN with RST (the relay refused the destination).
    private(set) var refused = false
    /// A RST arrived on the established connection.
    private(set) var wasReset = false
    private(set) var received: [UInt8] = []
    private(set) var receivedFIN = false
    /// Bytes handed to `write` and sent so far.
    private(set) var sent = 0
    private var sendNext: UInt32 = 7_000_000
    private var sendUnacknowledged: UInt32 = 7_000_000
    private var receiveNext: UInt32 = 0
    private var peerWindow = 0
    private var mss = 536
    /// Payload per segment whatever MSS the engine announced, as a kernel with segmentation offload
    /// hands a TUN super-packets of up to 64 KiB; nil: the MSS.
    var segmentSize: Int?
    private var outgoing: [UInt8] = []
    private var outgoingOffset = 0
    private var finQueued = false
    private var finSent = false

    init(from local: SocketEndpoint, to remote: SocketEndpoint, inject: @escaping ([UInt8]) -> Void) {
        self.local = local
        self.remote = remote
        self.inject = inject
    }

    /// Everything sent was acknowledged, FIN included once queued.
    var allAcknowledged: Bool { sendUnacknowledged == sendNext && outgoingOffset == outgoing.count }
    var isDone: Bool { state == .closed || (finSent && receivedFIN && allAcknowledged) }

    func connect() {
        emit([.syn], seq: sendNext, mss: 1460)
        sendNext &+= 1
    }

    /// Queues bytes to send; they go out as the engine's window allows.
    func write(_ bytes: [UInt8]) {
        outgoing += bytes
        pump()
    }

    /// FIN after the queued bytes.
    func shutdownWrite() {
        finQueued = true
        pump()
    }

    /// Aborts the connection (RST), as an application's close with SO_LINGER 0 does.
    func abort() {
        emit([.rst, .ack], seq: sendNext)
        state = .closed
    }

    /// One segment from the engine for this connection.
    func handle(_ segment: Segment) {
        guard state != .closed else { return }
        if segment.flags.contains(.rst) {
            if state == .synSent { refused = true } else { wasReset = true }
            state = .closed
            return
        }
        if state == .synSent {
            guard segment.flags.contains([.syn, .ack]), segment.acknowledgmentNumber == sendNext else { return }
            receiveNext = segment.sequenceNumber &+ 1
            sendUnacknowledged = segment.acknowledgmentNumber
            peerWindow = Int(segment.window)
            mss = Int(segment.maximumSegmentSize ?? 536)
            state = .established
            emit([.ack], seq: sendNext)
            pump()
            return
        }
        if segment.flags.contains(.ack), Int32(bitPattern: segment.acknowledgmentNumber &- sendUnacknowledged) > 0 {
            sendUnacknowledged = segment.acknowledgmentNumber
        }
        if segment.flags.contains(.ack) { peerWindow = Int(segment.window) }
        var mustAcknowledge = false
        if !segment.payload.isEmpty {
            mustAcknowledge = true
            if segment.sequenceNumber == receiveNext {
                received += segment.payload
                receiveNext &+= UInt32(segment.payload.count)
            }
        }
        if segment.flags.contains(.fin), segment.sequenceNumber &+ UInt32(segment.payload.count) == receiveNext, !receivedFIN {
            receivedFIN = true
            receiveNext &+= 1
            mustAcknowledge = true
        }
        if !pump() && mustAcknowledge { emit([.ack], seq: sendNext) }
    }

    /// Sends what the window allows (each segment acknowledges what was received); true if it sent
    /// anything.
    @discardableResult
    private func pump() -> Bool {
        var sentSomething = false
        while state == .established {
            let inFlight = Int(sendNext &- sendUnacknowledged)
            let waiting = outgoing.count - outgoingOffset
            let room = peerWindow - inFlight
            if waiting > 0 && room > 0 {
                let n = min(waiting, room, segmentSize ?? mss)
                let chunk = Array(outgoing[outgoingOffset..<outgoingOffset + n])
                emit([.ack, .psh], seq: sendNext, payload: chunk)
                outgoingOffset += n
                sendNext &+= UInt32(n)
                sent += n
                sentSomething = true
                continue
            }
            if waiting == 0 && finQueued && !finSent {
                emit([.ack, .fin], seq: sendNext)
                sendNext &+= 1
                finSent = true
                sentSomething = true
            }
            break
        }
        if outgoingOffset > 1 << 20 {
            outgoing.removeFirst(outgoingOffset)
            outgoingOffset = 0
        }
        return sentSomething
    }

    private func emit(_ flags: TCPFlags, seq: UInt32, mss: UInt16? = nil, payload: [UInt8] = []) {
        inject(tcpPacket(from: local, to: remote, seq: seq, ack: flags.contains(.ack) ? receiveNext : 0, flags: flags,
                         window: 65535, mss: mss, payload: payload))
    }
}
