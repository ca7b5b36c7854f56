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
    /// The relay's rule: nothing arrived for this long.
    case idleTimeout(milliseconds: UInt64)
    /// The client's rule: a PING went unanswered, and nothing else arrived, for this long.
    case pingTimeout(milliseconds: UInt64)
    /// The relay closed the carrier because its client's key left the allow-list (reload).
    case clientRemoved
    case localShutdown

    public var description: String {
        switch self {
        case .peerClosed: return "the peer closed the connection"
        case .ioError(let e): return "\(e)"
        case .recordError(let why): return "undecryptable record: \(why)"
        case .protocolError(let e): return "\(e)"
        case .idleTimeout(let ms): return "nothing received for \(secondsText(ms)) s"
        case .pingTimeout(let ms): return "no answer to PING and nothing else received for \(secondsText(ms)) s"
        case .clientRemoved: return "the client's key is no longer in the relay's allow-list"
        case .localShutdown: return "shutting down"
        }
    }
}

/// "0.5", "15": milliseconds as seconds, for log lines.
func secondsText(_ milliseconds: UInt64) -> String {
    milliseconds % 1000 == 0 ? "\(milliseconds / 1000)" : "\(Double(milliseconds) / 1000)"
}

/// An established carrier: one TCP socket after the Noise handshake, encrypted records in both
/// directions, and the multiplexing session on top. Loop-confined.
///
/// Writes are batched: frames encoded during a loop turn are sealed into records and written at the
/// end of the turn. The socket is registered edge-triggered for both directions once; nothing toggles
/// interest afterwards.
///
/// Liveness (`Keepalive`): the client pings every few seconds and measures the round trip; the relay
/// pings only a silent client. Either closes a carrier whose peer went quiet for too long.
///
/// Reading is bounded two ways, so one peer cannot take its end over. Per loop turn, a carrier reads
/// and handles frames for at most `readSliceNanoseconds`, then yields to the other sockets of the
/// loop and goes on in the next turn, inside a record if need be: a client sending OPENs as fast as
/// it can (each a socket and a connect at the relay, thousands to a record) gets a slice of the relay
/// like any other carrier, not all of it. And a peer that sends but never reads — whose answers
/// (PONG, OPEN_OK, RESET, CREDIT) would pile up without bound — is not read from while more than
/// twice the carrier budget waits to be written, until half of it has gone.
public final class Carrier: MuxSessionDelegate {
    /// How long one carrier reads and handles frames per loop turn while others wait. 0.5 ms is a
    /// dozen 64 KiB reads of DATA, so a lone fast transfer loses nothing to the yield, while another
    /// carrier waits at most about that long for its turn (test_floods.py measures it).
    static let readSliceNanoseconds: UInt64 = 500_000

    /// The record opener's buffer, 512 KiB: a read of a busy carrier takes what the socket holds, up
    /// to the end of the buffer, and leaves a partial record there, which moves to the front before
    /// the next read fits. With the opener's smallest buffer (126 KiB) that was every read or two, a
    /// quarter of a download's bytes copied once more (2 % of the client's CPU, `reqcpu.py --test
    /// iperf-down --perf`); four times the size moves a quarter as often, and reads take up to 450 KiB
    /// at once. Resident only once a carrier's reads have reached that far.
    static let openerBufferCapacity = 512 * 1024

    public let socket: Socket
    public let label: String
    private unowned let loop: EventLoop
    private var sealer: RecordSealer
    private var opener: RecordOpener
    /// The multiplexing session on top; made on first use, since it needs this carrier as its delegate.
    public private(set) lazy var session = MuxSession(role: role, settings: muxSettings, relayFeatures: relayFeatures, delegate: self)
    private let role: MuxSession.Role
    private let muxSettings: MuxSettings
    private let relayFeatures: CarrierFeatures
    private let outbound = ByteQueue(capacity: 1 << 20)
    private var keepalive: Keepalive
    private var livenessTimer: LoopTimer?
    private var flushScheduled = false
    private var deferredFlushTimer: LoopTimer?
    private var readResumeScheduled = false
    /// The frames of a record a slice stopped inside; valid until the next call on `opener`.
    private var unfinishedRecord: UnsafeRawBufferPointer?
    /// Set while too much output waits for a peer that does not read (see the type's doc).
    private var readPaused = false
    private var writable = true
    public private(set) var isClosed = false
    /// Bytes on the socket (encrypted records) and records, each way, for statistics.
    public private(set) var bytesSent = 0
    public private(set) var bytesReceived = 0
    public private(set) var recordsSent = 0
    public private(set) var recordsReceived = 0
    /// Called once when the carrier ends, after every stream was reset.
    public var onClose: ((Carrier, CarrierEnd) -> Void)?
    /// The keys of this carrier's UDP path (docs/protocol.md §8), where the relay advertised the
    /// feature (and, on the client, this end supports it); nil otherwise.
    public let pathKeys: PathKeys?
    /// This carrier's UDP path, at either end: told when the carrier closes, and gone with it.
    public var udpPath: CarrierUDPPath?

    /// - Parameters:
    ///   - relayFeatures: the feature bits of handshake message 2 (docs/protocol.md §1.1): what the
    ///     relay advertised, read by the client or sent by the relay.
    ///   - keepalive: `.client` or `.relay`, or the client's configured interval and misses.
    public init(socket: Socket, keys: TransportKeys, role: MuxSession.Role, settings: MuxSettings,
                relayFeatures: CarrierFeatures, keepalive: KeepaliveSettings, loop: EventLoop, label: String) throws(SystemError) {
        self.socket = socket
        self.loop = loop
        self.label = label
        self.sealer = RecordSealer(key: keys.sending)
        self.opener = RecordOpener(key: keys.receiving, bufferCapacity: Self.openerBufferCapacity)
        self.keepalive = Keepalive(settings: keepalive, now: MonotonicClock.nanoseconds())
        self.role = role
        self.muxSettings = settings
        self.relayFeatures = relayFeatures
        let pathUsable = role == .client ? relayFeatures.intersection(settings.features) : relayFeatures
        pathKeys = pathUsable.contains(.udpPath) ? PathKeys(keys) : nil
        _ = session  // made now: a client's HELLO goes out as its first frame (docs/protocol.md §1.1)
        try loop.register(fd: socket.fd, events: [.readable, .writable, .readHangup, .edgeTriggered]) { [unowned self] events in
            self.handle(events)
        }
        checkLiveness()
    }

    /// The round trip of the newest PING this carrier had answered, in nanoseconds (PING to PONG,
    /// through both ends' queues); nil before the first PONG. For statistics.
    public var lastRoundTripNanoseconds: UInt64? { keepalive.lastRoundTrip }

    /// When the newest PONG arrived (`MonotonicClock.nanoseconds()`); nil before the first.
    public var lastPongNanoseconds: UInt64? { keepalive.lastPong }

    /// Closes the socket and resets every stream.
    public func close(_ end: CarrierEnd) {
        guard !isClosed else { return }
        isClosed = true
        livenessTimer?.cancel()
        deferredFlushTimer?.cancel()
        loop.deregister(fd: socket.fd)
        socket.close()
        outbound.removeAll()
        session.close(.closed, message: "carrier \(label) closed: \(end)")
        let path = udpPath
        udpPath = nil
        path?.carrierDidClose()
        let callback = onClose
        onClose = nil
        callback?(self, end)
    }

    private func handle(_ events: IOEvents) {
        // With a continuation pending, reading waits for it: one slice per turn.
        let ended = events.contains(.readHangup) || events.contains(.error) || events.contains(.hangup)
        if !readResumeScheduled, events.contains(.readable) || ended {
            readAvailable(toEOF: ended)
        }
        if !isClosed && events.contains(.writable) {
            writable = true
            writeOutbound()
        }
    }

    /// Reads until the socket is drained, a slice of `readSliceNanoseconds` at most. A read that
    /// fills less than the buffer it was given took all there was: the next one would only say
    /// EAGAIN, and bytes arriving later raise a new edge (the socket is edge-triggered), so the loop
    /// stops there — one syscall less per wake-up, which a small request/response pays on every hop.
    /// Not when the peer's FIN or an error came with this edge (`toEOF`), nor when reading resumes
    /// (a later slice, or after a pause): no later edge would announce what is left.
    private func readAvailable(toEOF: Bool = true) {
        guard !readPaused, !isClosed else { return }
        if let wait = readDelay?(), wait > 0 {
            readInNextTurn(after: wait)
            return
        }
        let deadline = MonotonicClock.nanoseconds() + Self.readSliceNanoseconds
        // Records already read come first: the last slice may have stopped inside them.
        let finished = deliverRecords(until: deadline)
        onRecordsDelivered?()
        guard finished else {
            readInNextTurn()
            return
        }
        while !isClosed {
            if outbound.count > 2 * session.settings.carrierBudget {
                readPaused = true  // writeOutbound resumes once it has drained
                return
            }
            var result: IOResult<Int> = .wouldBlock
            var drained = false
            do {
                opener.receive { buffer in
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
                keepalive.received(now: MonotonicClock.nanoseconds())
                let finished = deliverRecords(until: deadline)
                onRecordsDelivered?()
                if !finished || MonotonicClock.nanoseconds() >= deadline {
                    readInNextTurn()
                    return
                }
                if drained && !toEOF { return }
            }
        }
    }

    /// Reads on in the next loop turn, after the events of other sockets, or `after` milliseconds
    /// from now: edge-triggered, the socket will not say again that it holds bytes.
    private func readInNextTurn(after milliseconds: UInt64 = 0) {
        guard !readResumeScheduled, !isClosed else { return }
        readResumeScheduled = true
        loop.schedule(afterMilliseconds: milliseconds) {  // strong: see EventLoop.schedule on weak captures
            self.readResumeScheduled = false
            self.readAvailable()
        }
    }

    /// Handles the complete records read so far, until `deadline`; false when it stopped for the
    /// deadline with frames left (kept for the next slice), true when none are left or it closed.
    private func deliverRecords(until deadline: UInt64) -> Bool {
        while !isClosed {
            let record: UnsafeRawBufferPointer
            if let rest = unfinishedRecord {
                record = rest
                unfinishedRecord = nil
            } else {
                let next: UnsafeRawBufferPointer?
                do {
                    next = try opener.nextRecord()
                } catch {
                    Log.warning("carrier \(label): \(error)", "carrier")
                    close(.recordError("\(error)"))
                    return true
                }
                guard let next else { return true }
                record = next
                recordsReceived += 1
            }
            do {
                let yield = { MonotonicClock.nanoseconds() >= deadline || (self.readDelay?() ?? 0) > 0 }
                if let stop = try session.receive(record: record, yieldingWhen: yield) {
                    unfinishedRecord = UnsafeRawBufferPointer(rebasing: record[stop...])
                    return false
                }
            } catch {
                Log.warning("carrier \(label): \(error)", "carrier")
                session.goAway(.protocolError)
                flush()
                close(.protocolError(error))
                return true
            }
        }
        return true
    }

    // MARK: MuxSessionDelegate

    public func session(_ session: MuxSession, didRequest stream: MuxStream, to destination: Destination) {
        onStreamRequest?(stream, destination)
    }

    /// Relay side: called for each OPEN from the client.
    public var onStreamRequest: ((MuxStream, Destination) -> Void)?

    public func session(_ session: MuxSession, didNegotiate features: CarrierFeatures) { onFeaturesNegotiated?(features) }
    public func session(_ session: MuxSession, didOfferUDPPath index: UInt32) { onUDPPathOffer?(index) }
    public func session(_ session: MuxSession, peerUsesUDPPath use: Bool) { udpPath?.peerUses(use) }

    /// Relay side: the client's HELLO arrived and these features are in effect.
    public var onFeaturesNegotiated: ((CarrierFeatures) -> Void)?
    /// Client side: the relay offered a UDP path with this index (UDP_PATH).
    public var onUDPPathOffer: ((UInt32) -> Void)?

    /// Called after the records of one read from the socket were handled, or a slice of them: where
    /// output that their frames caused, held to go out together, is sent (the relay's
    /// `DatagramBatch`, its destination writes). The bytes handed to stream handlers since the last
    /// call are still in place until it returns: the carrier reads into its record buffer again only
    /// after it.
    public var onRecordsDelivered: (() -> Void)?

    /// Relay side: how many milliseconds this carrier must wait before it reads on — its client opened
    /// streams faster than its rate (`--max-stream-rate`) — or 0. Asked between slices of frames;
    /// waiting stops only this carrier, and its peer's sends back up in TCP.
    public var readDelay: (() -> UInt64)?

    public func session(_ session: MuxSession, sealRecord plaintext: UnsafeRawBufferPointer) {
        do {
            try sealer.seal(plaintext, into: outbound)
            recordsSent += 1
        } catch {
            loop.afterTurn { self.close(.recordError("\(error)")) }
        }
    }

    public func queuedBytes(for session: MuxSession) -> Int { outbound.count }

    public func session(_ session: MuxSession, didReceivePong opaque: UInt64) {
        keepalive.pong(opaque, now: MonotonicClock.nanoseconds())
    }

    public func sessionNeedsFlush(_ session: MuxSession) {
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.afterTurn(self)  // `runTurnAction` flushes
    }

    /// One timer at a time. A flush before it fires takes the held frames with it and cancels the
    /// timer, so a held frame that an urgent write carried costs no wake-up of its own.
    public func sessionNeedsDeferredFlush(_ session: MuxSession) {
        guard deferredFlushTimer == nil else { return }
        deferredFlushTimer = loop.schedule(afterMilliseconds: session.settings.deferredFlushMilliseconds) {
            self.deferredFlushTimer = nil
            self.flush()
        }
    }

    /// Seals pending frames and writes what the socket takes.
    public func flush() {
        flushScheduled = false
        guard !isClosed else { return }
        deferredFlushTimer?.cancel()
        deferredFlushTimer = nil
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
        if readPaused && outbound.count <= session.settings.carrierBudget {
            readPaused = false
            readInNextTurn()
        }
    }

    // MARK: liveness

    /// Pings or closes as the keepalive says, and sets the timer for its next decision. Received
    /// bytes only move the keepalive's deadline on: the timer then fires early and is set again.
    private func checkLiveness() {
        guard !isClosed else { return }
        let now = MonotonicClock.nanoseconds()
        switch keepalive.tick(now: now) {
        case .dead:
            let settings = keepalive.settings
            let end: CarrierEnd = if case .probe = settings.mode {
                .pingTimeout(milliseconds: settings.deadAfterMilliseconds)
            } else {
                .idleTimeout(milliseconds: settings.deadAfterMilliseconds)
            }
            Log.info("carrier \(label): \(end)", "carrier")
            close(end)
        case .carryOn(let ping, let next):
            if let ping { session.ping(ping) }
            // Rounded up, so the timer never fires just before its deadline and spins.
            let wait = next > now ? (next - now + 999_999) / 1_000_000 : 0
            // Captured strongly (close() cancels the timer): a weak capture would slow every retain of
            // the carrier, which the session's budget check does per write (EventLoop.schedule).
            livenessTimer = loop.schedule(afterMilliseconds: wait) { self.checkLiveness() }
        }
    }
}

extension Carrier: TurnAction {
    /// The end of the turn in which the session first asked for a flush.
    public func runTurnAction() { flush() }
}
