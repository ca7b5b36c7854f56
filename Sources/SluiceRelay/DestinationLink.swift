import Glibc
import SluiceCarrier
import SluiceCrypto
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceMux
import SluiceWire

/// The relay's end of one stream: a TCP connection of its own to the destination, with bytes moved
/// both ways under the stream's flow control. Loop-confined.
///
/// Toward the destination: the bytes of one carrier read's frames are held where the carrier opened
/// them (`held`) and written together, with one `sendmsg`, when the carrier has delivered that
/// read's records (`writeHeld`, from the worker); what the socket does not take waits in
/// `toDestination` (bounded by the stream window) and credit goes back only as bytes are written.
/// Written one send per DATA frame, a one-stream upload made 2.7 sends per carrier read (perf stat
/// of the relay during the bench's iperf3 upload: 38,000 sends per GB), each waking the destination's
/// reader; gathered, 1. `Benchmarks/e2e/ab.py --tests iperf` against one send per frame: the
/// relay's CPU per GB uploaded 0.965× and 0.931× in two runs, the upload 1.055× and 1.027×.
///
/// Toward the client: the socket is read only while the stream has credit and the carrier has
/// budget, so a slow client leaves bytes in the destination's TCP window, not in memory.
final class DestinationLink: MuxStreamHandler {
    static let connectTimeoutMilliseconds: UInt64 = 10_000

    let stream: MuxStream
    let destination: SocketEndpoint
    private unowned let loop: EventLoop
    private unowned let worker: RelayWorker
    private var socket: Socket?
    private var connected = false
    private var readable = false
    private var writable = false
    private var sawEOF = false
    /// The destination's FIN or an error was signalled: read until EOF, whatever a read returned.
    private var hangupSeen = false
    private var shutWrite = false
    private let toDestination = ByteQueue(capacity: 0)
    /// Received bytes not yet written, in order, ahead of `toDestination` (empty while these are
    /// held): spans of the carrier's opened records, which stay where they are until the carrier
    /// has delivered the whole read (`Carrier.onRecordsDelivered`). The worker calls `writeHeld`
    /// then.
    private var held: [UnsafeRawBufferPointer] = []
    private var connectTimer: LoopTimer?
    private var finished = false
    let client: ClientID

    init(stream: MuxStream, destination: SocketEndpoint, client: ClientID, worker: RelayWorker, loop: EventLoop) {
        self.stream = stream
        self.destination = destination
        self.client = client
        self.worker = worker
        self.loop = loop
        stream.handler = self
    }

    /// Starts the non-blocking connect; the stream is accepted or reset when it completes.
    func start() {
        do {
            let s = try Socket.tcp(for: destination.address)
            socket = s
            s.setNoDelay()
            try s.connect(to: destination)
            try loop.register(fd: s.fd, events: [.readable, .writable, .readHangup, .edgeTriggered]) { [unowned self] in self.handle($0) }
        } catch {
            fail(reason: ResetReason(connectErrno: error.code), message: "\(error)")
            return
        }
        // Strong capture, cancelled on connect and release (see EventLoop.schedule on weak captures).
        connectTimer = loop.schedule(afterMilliseconds: Self.connectTimeoutMilliseconds) {
            guard !self.connected, !self.finished else { return }
            self.fail(reason: .timedOut, message: "connect to \(self.destination) timed out")
        }
    }

    private func handle(_ events: IOEvents) {
        guard let socket, !finished else { return }
        if !connected {
            guard events.contains(.writable) || events.contains(.error) || events.contains(.hangup) else { return }
            let err = socket.pendingError()
            guard err == 0 else {
                fail(reason: ResetReason(connectErrno: err), message: "connect to \(destination): \(SystemError.message(err))")
                return
            }
            connected = true
            connectTimer?.cancel()
            stream.accept()
        }
        if events.contains(.writable) {
            writable = true
            flushToDestination()
        }
        let ended = events.contains(.readHangup) || events.contains(.error) || events.contains(.hangup)
        if ended { hangupSeen = true }
        if events.contains(.readable) || ended {
            readable = true
            pumpToClient()
        }
    }

    // MARK: destination -> client

    /// Reads the destination straight into the record the stream's carrier is assembling
    /// (`MuxStream.send(upTo:filling:)`): no copy between the socket and the cipher.
    private func pumpToClient() {
        guard let socket else { return }
        while readable && !sawEOF && !finished {
            let room = stream.worthwhileSendCapacity
            if room == 0 {
                stream.notifyWhenSendable()  // streamCanSend brings us back
                return
            }
            var result: IOResult<Int> = .wouldBlock
            var offered = 0
            do {
                _ = try stream.send(upTo: room) { (buffer) throws(SystemError) -> Int in
                    offered = buffer.count
                    result = try socket.read(into: buffer)
                    if case .done(let n) = result { return n }
                    return 0
                }
            } catch {
                fail(reason: .closed, message: "destination \(destination): \(error)")
                return
            }
            switch result {
            case .wouldBlock:
                readable = false
            case .done(0):
                sawEOF = true
                stream.finish()
                finishIfDone()
            case .done(let n):
                // A short read took all there was (epoll(7) on stream sockets): the next read would
                // only say EAGAIN, and new bytes raise a new edge. Not once the peer's FIN or an
                // error was signalled: no later edge would announce it again.
                if n < offered && !hangupSeen { readable = false }
            }
        }
    }

    func streamCanSend(_ stream: MuxStream) { pumpToClient() }

    // MARK: client -> destination

    func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer) {
        guard !held.isEmpty || (toDestination.isEmpty && writable && socket != nil) else {
            toDestination.append(data)
            return
        }
        if held.isEmpty { worker.writeWhenDelivered(self) }
        held.append(data)
        if held.count == Socket.maximumSpans { writeHeld() }
    }

    /// Writes the held spans with one `sendmsg` and copies what the socket did not take into
    /// `toDestination`. Before the carrier reads on: the spans point into its record buffer.
    func writeHeld() {
        guard !held.isEmpty else { return }
        defer { held.removeAll(keepingCapacity: true) }
        guard let socket, !finished else { return }
        var written = 0
        switch (try? socket.write(gathering: held)) ?? .done(-1) {
        case .done(let n) where n >= 0: written = n
        case .done:
            fail(reason: .closed, message: "write to destination \(destination) failed")
            return
        case .wouldBlock: writable = false
        }
        var skip = written
        for span in held {
            if skip < span.count { toDestination.append(UnsafeRawBufferPointer(rebasing: span[skip...])) }
            skip = max(0, skip - span.count)
        }
        if written > 0 { stream.consumed(written) }
    }

    private func flushToDestination() {
        writeHeld()
        guard let socket else { return }
        var total = 0
        var failed = false
        while writable && !toDestination.isEmpty {
            switch (try? socket.write(toDestination.readableBytes)) ?? .done(-1) {
            case .done(let n) where n >= 0:
                toDestination.consume(n)
                total += n
            case .done:
                failed = true
            case .wouldBlock:
                writable = false
            }
            if failed { break }
        }
        if failed {
            fail(reason: .closed, message: "write to destination \(destination) failed")
            return
        }
        if total > 0 { stream.consumed(total) }
        if toDestination.isEmpty && stream.receivedFIN && !shutWrite {
            shutWrite = true
            socket.shutdownWrite()
            finishIfDone()
        }
    }

    func streamDidReceiveFIN(_ stream: MuxStream) { flushToDestination() }

    // MARK: lifecycle

    func streamDidOpen(_ stream: MuxStream) {}

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {
        release(resetDestination: true)
    }

    /// The destination policy refuses this destination since a reload: the stream is reset.
    func refuse(_ refusal: PolicyRefusal) {
        guard !finished else { return }
        Log.info("client \(client): stream \(stream.id) to \(destination) reset: \(refusal.message)", "relay")
        stream.reset(PolicyRefusal.resetReason(on: stream.session), message: refusal.message)
        release(resetDestination: true)
    }

    private func fail(reason: ResetReason, message: String) {
        if !connected && reason != .closed {
            worker.counters.streamsRefused[reason, default: 0] += 1
        }
        if !connected && reason != .closed, let heldBack = worker.streamLog.admit(client, now: loop.now) {
            Log.info("client \(client): stream \(stream.id) to \(destination) refused: \(message)" + worker.streamLog.suffix(heldBack), "relay")
        } else {
            Log.debug("stream \(stream.id) to \(destination): \(message)", "relay")
        }
        stream.reset(reason, message: String(message.prefix(200)))
        release(resetDestination: true)
    }

    private func finishIfDone() {
        if sawEOF && shutWrite { release(resetDestination: false) }
    }

    private func release(resetDestination: Bool) {
        guard !finished else { return }
        finished = true
        connectTimer?.cancel()
        if let socket {
            loop.forgetBeforeClose(fd: socket.fd)
            if resetDestination { socket.closeWithReset() } else { socket.close() }
        }
        socket = nil
        held.removeAll()
        toDestination.removeAll()
        stream.handler = nil
        worker.linkEnded(self)
    }
}

extension ResetReason {
    /// The reset reason a failed connect maps to.
    init(connectErrno code: Int32) {
        switch code {
        case ECONNREFUSED: self = .refused
        case ETIMEDOUT: self = .timedOut
        default: self = .unreachable
        }
    }
}
