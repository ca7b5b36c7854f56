import Glibc
import SluiceCrypto
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceMux

/// Why a carrier ended.
public enum CarrierEnd: CustomStringConvertible, Sendable {
    case peerClosed
    case ioError(SystemError)
    case recordError(String)
    case protocolError(MuxError)
    case idleTimeout
    case localShutdown

    public var description: String {
        switch self {
        case .peerClosed: return "the peer closed the connection"
        case .ioError(let e): return "\(e)"
        case .recordError(let why): return "undecryptable record: \(why)"
        case .protocolError(let e): return "\(e)"
        case .idleTimeout: return "nothing received for \(Carrier.deadAfterMilliseconds / 1000) s"
        case .localShutdown: return "shutting down"
        }
    }
}

/// An established carrier: one TCP socket after the Noise handshake, encrypted records in both
/// directions, and the multiplexing session on top. Loop-confined.
///
/// Writes are batched: frames encoded during a loop turn are sealed into records and written at the
/// end of the turn. The socket is registered edge-triggered for both directions once; nothing toggles
/// interest afterwards.
public final class Carrier: MuxSessionDelegate {
    public static let pingAfterMilliseconds: UInt64 = 10_000
    public static let deadAfterMilliseconds: UInt64 = 30_000

    public let socket: Socket
    public let label: String
    private unowned let loop: EventLoop
    private var sealer: RecordSealer
    private var opener: RecordOpener
    public private(set) var session: MuxSession!
    private let outbound = ByteQueue(capacity: 1 << 20)
    private var lastReceive: UInt64
    private var livenessTimer: LoopTimer?
    private var flushScheduled = false
    private var writable = true
    public private(set) var isClosed = false
    /// Bytes on the socket (encrypted records) and records, each way, for statistics.
    public private(set) var bytesSent = 0
    public private(set) var bytesReceived = 0
    public private(set) var recordsSent = 0
    public private(set) var recordsReceived = 0
    /// Called once when the carrier ends, after every stream was reset.
    public var onClose: ((Carrier, CarrierEnd) -> Void)?

    public init(socket: Socket, keys: TransportKeys, role: MuxSession.Role, settings: MuxSettings, loop: EventLoop, label: String) throws(SystemError) {
        self.socket = socket
        self.loop = loop
        self.label = label
        self.sealer = RecordSealer(key: keys.sending)
        self.opener = RecordOpener(key: keys.receiving)
        self.lastReceive = loop.now
        self.session = MuxSession(role: role, settings: settings, delegate: self)
        try loop.register(fd: socket.fd, events: [.readable, .writable, .readHangup, .edgeTriggered]) { [unowned self] events in
            self.handle(events)
        }
        scheduleLiveness()
    }

    /// Closes the socket and resets every stream.
    public func close(_ end: CarrierEnd) {
        guard !isClosed else { return }
        isClosed = true
        livenessTimer?.cancel()
        loop.deregister(fd: socket.fd)
        socket.close()
        outbound.removeAll()
        session.close(.closed, message: "carrier \(label) closed: \(end)")
        let callback = onClose
        onClose = nil
        callback?(self, end)
    }

    private func handle(_ events: IOEvents) {
        let ended = events.contains(.readHangup) || events.contains(.error) || events.contains(.hangup)
        if events.contains(.readable) || ended {
            readAvailable(toEOF: ended)
        }
        if !isClosed && events.contains(.writable) {
            writable = true
            writeOutbound()
        }
    }

    /// Reads until the socket is drained. A read that fills less than the buffer it was given took
    /// all there was: the next one would only say EAGAIN, and bytes arriving later raise a new edge
    /// (the socket is edge-triggered), so the loop stops there — one syscall less per wake-up, which
    /// a small request/response pays on every hop. Not when the peer's FIN or an error came with
    /// this edge (`toEOF`): no later edge would announce them again.
    private func readAvailable(toEOF: Bool) {
        while !isClosed {
            var result: IOResult<Int> = .wouldBlock
            var drained = false
            do {
                opener.receive(minimum: 64 * 1024) { buffer in
                    result = (try? socket.read(into: buffer)) ?? .done(-1)
                    if case .done(let n) = result {
                        drained = n > 0 && n < buffer.count
                        return n
                    }
                    return 0
                }
            }
            switch result {
            case .wouldBlock:
                return
            case .done(0):
                close(.peerClosed)
                return
            case .done(let n) where n < 0:
                close(.ioError(SystemError("read from carrier")))
                return
            case .done(let n):
                bytesReceived += n
                lastReceive = loop.now
                deliverRecords()
                onRecordsDelivered?()
                if drained && !toEOF { return }
            }
        }
    }

    private func deliverRecords() {
        while !isClosed {
            let record: UnsafeRawBufferPointer?
            do {
                record = try opener.nextRecord()
            } catch {
                Log.warning("carrier \(label): \(error)", "carrier")
                close(.recordError("\(error)"))
                return
            }
            guard let record else { return }
            recordsReceived += 1
            do {
                try session.receive(record: record)
            } catch {
                Log.warning("carrier \(label): \(error)", "carrier")
                session.goAway(.protocolError)
                flush()
                close(.protocolError(error))
                return
            }
        }
    }

    // MARK: MuxSessionDelegate

    public func session(_ session: MuxSession, didRequest stream: MuxStream, to destination: Destination) {
        onStreamRequest?(stream, destination)
    }

    /// Relay side: called for each OPEN from the client.
    public var onStreamRequest: ((MuxStream, Destination) -> Void)?

    /// Called after the records of one read from the socket were handled: where output that their
    /// frames caused, held to go out together, is sent (the relay's `DatagramBatch`).
    public var onRecordsDelivered: (() -> Void)?

    public func session(_ session: MuxSession, sealRecord plaintext: UnsafeRawBufferPointer) {
        do {
            try sealer.seal(plaintext, into: outbound)
            recordsSent += 1
        } catch {
            loop.afterTurn { self.close(.recordError("\(error)")) }
        }
    }

    public func queuedBytes(for session: MuxSession) -> Int { outbound.count }

    public func sessionNeedsFlush(_ session: MuxSession) {
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.afterTurn { self.flush() }  // strong: see EventLoop.schedule on weak captures
    }

    /// Seals pending frames and writes what the socket takes.
    public func flush() {
        flushScheduled = false
        guard !isClosed else { return }
        session.flush()
        writeOutbound()
    }

    private func writeOutbound() {
        let before = outbound.count
        while writable && !outbound.isEmpty {
            do {
                switch try socket.write(outbound.readableBytes) {
                case .done(let n):
                    outbound.consume(n)
                    bytesSent += n
                case .wouldBlock: writable = false
                }
            } catch {
                close(.ioError(error))
                return
            }
        }
        if outbound.count < before { session.carrierDrained() }
    }

    // MARK: liveness

    private func scheduleLiveness() {
        // Captured strongly (close() cancels the timer): a weak capture would slow every retain of
        // the carrier, which the session's budget check does per write (EventLoop.schedule).
        livenessTimer = loop.schedule(afterMilliseconds: Self.pingAfterMilliseconds) {
            guard !self.isClosed else { return }
            let idle = self.loop.now - self.lastReceive
            if idle >= Self.deadAfterMilliseconds {
                Log.info("carrier \(self.label): \(CarrierEnd.idleTimeout)", "carrier")
                self.close(.idleTimeout)
                return
            }
            if idle >= Self.pingAfterMilliseconds { self.session.ping(self.loop.now) }
            self.scheduleLiveness()
        }
    }
}
