import SluiceWire

/// What a session needs from its carrier and tells its owner. Called on the carrier's loop thread.
public protocol MuxSessionDelegate: AnyObject {
    /// Relay side: the client asks for a stream to `destination`. Answer with `stream.accept()` once
    /// connected, or `stream.reset(_:)`; set `stream.handler` first.
    func session(_ session: MuxSession, didRequest stream: MuxStream, to destination: Destination)
    /// A finished record's plaintext (whole frames) to seal and queue on the carrier.
    func session(_ session: MuxSession, sealRecord plaintext: UnsafeRawBufferPointer)
    /// Ciphertext bytes queued on the carrier and not yet written to its socket.
    func queuedBytes(for session: MuxSession) -> Int
    /// Output is pending; the carrier should flush at the end of this loop turn.
    func sessionNeedsFlush(_ session: MuxSession)
    /// Output is pending that no one waits on: the carrier may hold it for its next flush, but for
    /// no longer than `MuxSettings.deferredFlushMilliseconds`.
    func sessionNeedsDeferredFlush(_ session: MuxSession)
    /// The peer answered a PING with `opaque` (the carrier's keepalive measures round trips with it).
    func session(_ session: MuxSession, didReceivePong opaque: UInt64)
    /// Relay side: the client's HELLO arrived; `features` are in effect from now on.
    func session(_ session: MuxSession, didNegotiate features: CarrierFeatures)
    /// Client side: the relay offers a UDP path for this carrier with `index` (UDP_PATH, §8).
    func session(_ session: MuxSession, didOfferUDPPath index: UInt32)
    /// Relay side: the client asks for this carrier's datagrams on the UDP path, or no longer
    /// (UDP_PATH_USE, §8).
    func session(_ session: MuxSession, peerUsesUDPPath use: Bool)
}

extension MuxSessionDelegate {
    public func sessionNeedsDeferredFlush(_ session: MuxSession) { sessionNeedsFlush(session) }
    public func session(_ session: MuxSession, didReceivePong opaque: UInt64) {}
    public func session(_ session: MuxSession, didNegotiate features: CarrierFeatures) {}
    public func session(_ session: MuxSession, didOfferUDPPath index: UInt32) {}
    public func session(_ session: MuxSession, peerUsesUDPPath use: Bool) {}
}

/// Another way for an association's datagrams than the carrier: the UDP path of docs/protocol.md §8.
/// A session with one (`MuxSession.datagramPath`) offers it every datagram of an open association
/// first, and encodes on the carrier only what it refuses. Loop-confined like the session.
public protocol MuxDatagramPath: AnyObject {
    /// Sends one datagram of association `stream` to (client) or from (relay) `endpoint`; true when
    /// the path took it (sent, or dropped and counted as UDP may be), false when it cannot carry it
    /// now — not validated, not in use, too big for it — and the carrier must.
    func send(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer) -> Bool
    /// Sends at once what the path holds of this turn's datagrams, ahead of the carrier's write:
    /// one of them opens its association (docs/protocol.md §8, item 11), and it should reach the
    /// relay before the record that carries the OPEN, not after it.
    func sendHeld()
}

extension MuxDatagramPath {
    public func sendHeld() {}
}

/// Multiplexing on one carrier: stream table, flow control and frame encoding (docs/protocol.md §3–4).
/// Both ends use it: the client opens streams, the relay accepts them. Loop-confined.
public final class MuxSession {
    public enum Role: Sendable { case client, relay }

    public let role: Role
    public let settings: MuxSettings
    public unowned let delegate: MuxSessionDelegate
    private(set) var streams: [UInt32: MuxStream] = [:]
    private var nextStreamID: UInt32 = 1
    /// Relay: the newest OPEN read on the carrier (OPENs come in id order).
    private var highestPeerStreamID: UInt32 = 0
    /// Relay, where UDP path opens are in effect: associations a path datagram opened whose OPEN
    /// has not come on the carrier yet, live or already ended. Their OPEN is then answered already
    /// (OPEN_OK or RESET went when the path opened them) and only moves `highestPeerStreamID`;
    /// an id here is never opened twice. All lie within `pathOpenReach` past `highestPeerStreamID`,
    /// so there are at most half that many.
    private var openedByPath = PathOpenedIDs()
    /// How far past the newest OPEN on the carrier a path datagram may open a stream id: the
    /// associations a client opens while its OPENs still wait in the carrier (a burst of new
    /// sockets behind a full carrier). A path datagram farther out is dropped like one for an
    /// unknown stream, and its association opens when its OPEN arrives.
    public static let pathOpenReach: UInt32 = 1024
    /// Relay: associations path datagrams opened (their OPEN was still on its way).
    public private(set) var associationsOpenedByPath = 0
    /// Relay: whether the RESETs of associations evicted at the cap go at once.
    private var evictions = EvictionPacing()
    private var waiting: [MuxStream] = []
    /// Plaintext of the record being assembled.
    private let recordBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Frame.maximumRecordPlaintext, alignment: 16)
    private var record: FrameEncoder
    private var flushRequested = false
    /// Frames that may wait are in the record, and the carrier was asked to flush them in time.
    private var deferredFlushRequested = false
    /// Client: the path took a datagram of an association whose OPEN is in this turn's record
    /// (bit 3); `flush` has the path send first.
    private var pathHoldsOpening = false
    public private(set) var isClosed = false
    /// Set when the peer sent GO_AWAY: no new streams on this session.
    public private(set) var peerGoingAway = false
    private var negotiation: FeatureNegotiation
    /// Whether any frame arrived yet (HELLO must be the first).
    private var receivedFrame = false
    /// The UDP path this carrier's open associations send their datagrams on when it takes them
    /// (docs/protocol.md §8); nil: all go on the carrier.
    public var datagramPath: MuxDatagramPath?
    /// Relay: UDP_PATH was sent; client: UDP_PATH arrived. At most once per carrier.
    public private(set) var udpPathOffered = false

    /// - Parameter relayFeatures: the feature bits of handshake message 2 (docs/protocol.md §1.1) —
    ///   on the client what the relay advertised, on the relay what it advertised. A client that was
    ///   offered any sends HELLO with `settings.features` at once, as the carrier's first frame.
    public init(role: Role, settings: MuxSettings = MuxSettings(), relayFeatures: CarrierFeatures = [],
                delegate: MuxSessionDelegate) {
        self.role = role
        self.settings = settings
        self.delegate = delegate
        windowGrowthRemaining = settings.windowGrowthBudget
        record = FrameEncoder(recordBuffer)
        negotiation = FeatureNegotiation(role: role, advertised: relayFeatures, supported: settings.features)
        if let hello = negotiation.helloToSend { append(.hello(hello)) }
    }

    /// The features in effect on this carrier: on the client those both ends support from the start,
    /// on the relay none until the client's HELLO arrived.
    public var features: CarrierFeatures { negotiation.inEffect }

    deinit { recordBuffer.deallocate() }

    /// Live streams on this carrier.
    public var streamCount: Int { streams.count }

    /// Bytes the streams of this carrier may still be granted beyond their announced windows
    /// (`ReceiveWindowTuning`); a stream gives its growth back when it closes.
    private(set) var windowGrowthRemaining: Int

    /// Bytes the streams of this carrier are granted now beyond their announced windows.
    public var windowGrowth: Int { settings.windowGrowthBudget - windowGrowthRemaining }

    /// Up to `wanted` bytes of window growth for one of this carrier's streams, from its own budget
    /// and `settings.windowGrowthPool`; returns what it granted.
    func takeWindowGrowth(upTo wanted: Int) -> Int {
        let allowed = min(wanted, windowGrowthRemaining)
        let granted = settings.windowGrowthPool?.take(upTo: allowed) ?? allowed
        windowGrowthRemaining -= granted
        return granted
    }

    /// Growth a closing stream was granted, back to the carrier's budget and the pool.
    private func giveBackWindowGrowth(_ count: Int) {
        windowGrowthRemaining += count
        settings.windowGrowthPool?.giveBack(count)
    }

    /// Live UDP associations among them.
    public private(set) var associationCount = 0

    /// Bytes the carrier can still take before its budget is used up.
    public var budgetRemaining: Int {
        max(0, settings.carrierBudget - delegate.queuedBytes(for: self) - record.count)
    }

    // MARK: opening

    /// Client side: opens a stream to `destination`. The handler hears `streamDidOpen` or a reset.
    public func open(to destination: Destination, handler: MuxStreamHandler) -> MuxStream {
        open(to: destination, datagrams: false, handler: handler)
    }

    /// Client side: opens a UDP association (docs/protocol.md §6) whose first datagram goes to
    /// `destination`. Datagrams may be sent at once, before OPEN_OK.
    public func openAssociation(to destination: Destination, handler: MuxStreamHandler) -> MuxStream {
        open(to: destination, datagrams: true, handler: handler)
    }

    private func open(to destination: Destination, datagrams: Bool, handler: MuxStreamHandler) -> MuxStream {
        precondition(role == .client, "only the client opens streams")
        let id = nextStreamID
        nextStreamID &+= 2
        let window = datagrams ? 0 : settings.streamWindow
        let stream = MuxStream(id: id, session: self, sendCredit: 0, receiveWindow: window, isAssociation: datagrams)
        stream.handler = handler
        streams[id] = stream
        if datagrams { associationCount += 1 }
        // Where UDP path opens are in effect the association's first datagram opens it on the relay
        // (docs/protocol.md §8, item 11), so its OPEN need not go at once; one that rides the carrier
        // instead has its frame flush the record, OPEN and all, this turn.
        let urgent = !(datagrams && features.contains(.udpPathOpens) && datagramPath != nil)
        append(.open(stream: id, window: UInt32(window), proto: datagrams ? .udp : .tcp, destination: destination), urgent: urgent)
        return stream
    }

    // MARK: encoding (called by MuxStream)

    func encodeData(stream: MuxStream, _ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let room = record.remaining - Frame.headerLength
            guard room >= min(1024, bytes.count - offset) else {
                sealRecord()
                continue
            }
            let n = min(settings.maxDataFrame, bytes.count - offset, room)
            let appended = record.appendData(stream: stream.id, payload: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + n]))
            assert(appended, "room was checked")
            offset += n
        }
        requestFlush()
    }

    /// One DATA frame whose payload `fill` writes straight into the record being assembled: it gets
    /// room for at most `maximum` bytes and one frame (`maxDataFrame`), in this record if at least a
    /// worthwhile send's worth (16 KiB, or `maximum` if less) is left there, else in a fresh one. It
    /// returns the bytes it wrote; zero or less frames nothing and is returned as is.
    func encodeData<E: Error>(stream: MuxStream, upTo maximum: Int,
                              filling fill: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) -> Int {
        let wanted = min(maximum, settings.maxDataFrame)
        if record.dataPayloadSpace().count < min(wanted, MuxStream.worthwhileSend) { sealRecord() }
        let space = record.dataPayloadSpace()
        let room = UnsafeMutableRawBufferPointer(rebasing: space[0..<min(wanted, space.count)])
        let n = try fill(room)
        guard n > 0 else { return n }
        precondition(n <= room.count, "filled \(n) bytes into a room of \(room.count)")
        record.commitData(stream: stream.id, count: n)
        requestFlush()
        return n
    }

    /// Encodes one whole datagram, split over frames (and records) as needed; false, encoding
    /// nothing, when the carrier budget cannot take it (docs/protocol.md §6: dropped, never queued).
    ///
    /// An association the peer knows about (client: OPEN_OK arrived) offers it to `datagramPath`
    /// first. A datagram sent before then rides the carrier, right behind its OPEN, so that it never
    /// reaches the relay before the association does — unless UDP path opens are in effect
    /// (docs/protocol.md §8, item 11), where the path datagram itself opens the association if it
    /// arrives first.
    func encodeDatagram(stream: MuxStream, endpoint: SocketEndpoint, _ payload: UnsafeRawBufferPointer) -> Bool {
        if stream.isOpen || features.contains(.udpPathOpens), let path = datagramPath,
           path.send(stream: stream.id, endpoint: endpoint, payload: payload) {
            if !stream.isOpen { pathHoldsOpening = true }
            return true
        }
        return encodeOnCarrier(stream: stream, endpoint: endpoint, payload)
    }

    /// Encodes a datagram on the carrier only (DATAGRAM frames); false when the budget cannot take it.
    private func encodeOnCarrier(stream: MuxStream, endpoint: SocketEndpoint, _ payload: UnsafeRawBufferPointer) -> Bool {
        guard !isClosed, payload.count <= FrameEncoder.maximumDatagram,
              budgetRemaining >= payload.count + FrameEncoder.datagramOverhead(endpoint: endpoint) else { return false }
        var rest = payload
        var first: SocketEndpoint? = endpoint
        while true {
            guard let taken = record.appendDatagram(stream: stream.id, endpoint: first, payload: rest) else {
                sealRecord()  // an empty record always takes a frame
                continue
            }
            if taken == rest.count { break }
            rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
            first = nil
            sealRecord()
        }
        requestFlush()
        return true
    }

    func encodeDatagramError(stream: MuxStream, _ code: DatagramErrorCode, mtu: Int, endpoint: SocketEndpoint) {
        append(.datagramError(stream: stream.id, code: code, mtu: UInt16(clamping: mtu), endpoint: endpoint))
    }

    func encodeCredit(stream: MuxStream, _ increment: Int) { append(.credit(stream: stream.id, increment: UInt32(increment))) }
    func encodeFIN(stream: MuxStream) { append(.fin(stream: stream.id)) }
    /// OPEN_OK of an association a path datagram opened waits for the carrier's next write (at most
    /// `MuxSettings.deferredFlushMilliseconds`): the client sends and delivers its datagrams without
    /// it, and a record of its own would cost both ends a write and a read while the association's
    /// first answer is on its way.
    func encodeOpenOK(stream: MuxStream) {
        append(.openOK(stream: stream.id, window: UInt32(stream.receiveWindow)), urgent: !openedByPath.contains(stream.id))
    }
    func encodeReset(stream id: UInt32, _ reason: ResetReason, message: String, urgent: Bool) {
        append(.reset(stream: id, reason: reason, message: message), urgent: urgent)
    }
    /// Relay: the RESET of an association evicted at the cap, at once or with the next record
    /// (`EvictionPacing`).
    func encodeEviction(stream id: UInt32, message: String) {
        encodeReset(stream: id, .timedOut, message: message, urgent: evictions.evicted(id))
    }

    /// Relay: whether RESETs of evicted associations wait for the carrier's next record, because the
    /// client was seen evicting them too (`EvictionPacing`).
    var evictionResetsWait: Bool { evictions.clientEvictsToo }

    /// Relay: the client sent a datagram for `id`, which is not live. When the relay evicted it, the
    /// client is still using what it evicts: its RESET goes now, and later ones at once.
    private func datagramForEnded(_ id: UInt32) {
        if role == .relay, evictions.datagramArrived(for: id) { requestFlush() }
    }

    /// Sends PING with `opaque`; the peer echoes it in PONG.
    public func ping(_ opaque: UInt64) { append(.ping(opaque)) }

    /// Sends GO_AWAY: we will open or accept no new streams.
    public func goAway(_ reason: ResetReason) { append(.goAway(reason)) }

    // MARK: UDP path (docs/protocol.md §8)

    /// Relay side: offers the client a UDP path for this carrier with `index` (UDP_PATH), once,
    /// where the feature is in effect.
    public func offerUDPPath(index: UInt32) {
        precondition(role == .relay && features.contains(.udpPath) && !udpPathOffered && index != 0, "UDP_PATH out of turn")
        udpPathOffered = true
        append(.udpPath(index: index))
    }

    /// Client side: tells the relay whether to send this carrier's datagrams on the UDP path
    /// (UDP_PATH_USE), after it offered one.
    public func useUDPPath(_ use: Bool) {
        precondition(role == .client && udpPathOffered, "UDP_PATH_USE before UDP_PATH")
        append(.udpPathUse(use))
    }

    /// A datagram of association `id` that arrived on the UDP path: delivered like one from DATAGRAM
    /// frames. False when no such association is live — the path is not ordered with the carrier, so
    /// a datagram may cross the RESET that closed it; it is dropped, never a protocol error.
    ///
    /// Relay, where UDP path opens are in effect (docs/protocol.md §8, item 11): a datagram for a
    /// stream id the client may have opened but whose OPEN has not come on the carrier yet opens
    /// that association first, as an OPEN of `proto` 17 to `endpoint` would, and is then delivered.
    public func receivePathDatagram(stream id: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer) -> Bool {
        guard !isClosed else { return false }
        guard let stream = streams[id] ?? openFromPath(id, endpoint: endpoint) else {
            datagramForEnded(id)
            return false
        }
        guard stream.isAssociation, !stream.isClosed else { return false }
        stream.handler?.stream(stream, didReceiveDatagram: payload, endpoint: endpoint)
        return true
    }

    /// The association a path datagram for `id` opens, or nil where it may open none: the feature
    /// is not in effect, the id is not the client's, its OPEN was read already (the association
    /// ended: the datagram crossed its RESET), the path opened it already (it ended since), it lies
    /// beyond `pathOpenReach`, or the client is going away.
    private func openFromPath(_ id: UInt32, endpoint: SocketEndpoint) -> MuxStream? {
        guard role == .relay, features.contains(.udpPathOpens), id % 2 == 1, id > highestPeerStreamID,
              id - highestPeerStreamID <= Self.pathOpenReach, !openedByPath.contains(id), !peerGoingAway else { return nil }
        openedByPath.insert(id)
        associationsOpenedByPath += 1
        let stream = acceptOpen(id, window: 0, association: true)
        delegate.session(self, didRequest: stream, to: Destination(endpoint))
        return streams[id]
    }

    /// Relay: a stream the client opened (its OPEN, or a path datagram that opened it), in the table
    /// before the delegate decides on it.
    private func acceptOpen(_ id: UInt32, window: UInt32, association: Bool) -> MuxStream {
        let stream = MuxStream(id: id, session: self, sendCredit: association ? 0 : Int(window),
                               receiveWindow: association ? 0 : settings.streamWindow, isAssociation: association)
        streams[id] = stream
        if association { associationCount += 1 }
        return stream
    }

    /// A datagram of association `id` that the UDP path took but could not send after all (the
    /// kernel refused its size when the batch went out): it goes on the carrier, as one too big for
    /// the path would have. False when the association is gone or the carrier budget is full.
    public func sendDatagramOnCarrier(stream id: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer) -> Bool {
        guard !isClosed, let stream = streams[id], stream.isAssociation, !stream.isClosed else { return false }
        return encodeOnCarrier(stream: stream, endpoint: endpoint, payload)
    }

    /// Encodes `frame` into the record being assembled. An `urgent` frame has the carrier flush at
    /// the end of this loop turn; another rides with the next flush, due within
    /// `MuxSettings.deferredFlushMilliseconds`.
    private func append(_ frame: Frame, urgent: Bool = true) {
        guard !isClosed else { return }
        do {
            if try !record.append(frame) {
                sealRecord()
                _ = try record.append(frame)
            }
        } catch {
            // Only an OPEN with an unencodable domain can fail; the stream layer never builds one.
            assertionFailure("unencodable frame \(frame): \(error)")
        }
        if urgent { requestFlush() } else { requestDeferredFlush() }
    }

    private func requestFlush() {
        if !flushRequested {
            flushRequested = true
            delegate.sessionNeedsFlush(self)
        }
    }

    private func requestDeferredFlush() {
        if !flushRequested && !deferredFlushRequested {
            deferredFlushRequested = true
            delegate.sessionNeedsDeferredFlush(self)
        }
    }

    private func sealRecord() {
        guard record.count > 0 else { return }
        delegate.session(self, sealRecord: record.encoded)
        record.removeAll()
    }

    /// Seals what was encoded this turn. The carrier calls it before writing to its socket.
    public func flush() {
        flushRequested = false
        deferredFlushRequested = false
        if pathHoldsOpening {
            pathHoldsOpening = false
            datagramPath?.sendHeld()
        }
        sealRecord()
    }

    // MARK: budget

    func waitToSend(_ stream: MuxStream) {
        if !stream.waitingToSend {
            stream.waitingToSend = true
            waiting.append(stream)
        }
    }

    /// The carrier wrote to its socket: let waiting streams send again, oldest first, while budget lasts.
    public func carrierDrained() {
        // Take the list first: a handler may send (re-queueing itself) or close the session.
        let ready = waiting
        waiting.removeAll(keepingCapacity: true)
        for (index, stream) in ready.enumerated() {
            guard budgetRemaining > 0, !isClosed else {
                // Out of budget again: the rest keep their turn, ahead of streams queued since.
                let rest = ready[index...].filter { !$0.isClosed }
                waiting.insert(contentsOf: rest, at: 0)
                return
            }
            stream.waitingToSend = false
            // A stream without credit is woken by CREDIT instead.
            if !stream.isClosed && stream.sendCredit > 0 { stream.handler?.streamCanSend(stream) }
        }
    }

    // MARK: lifecycle

    func closeIfDone(_ stream: MuxStream) {
        if stream.sentFIN && stream.receivedFIN { remove(stream) }
    }

    func remove(_ stream: MuxStream) {
        // Only the registered stream counts: a closed stream's id may be looked up again.
        if streams[stream.id] === stream {
            if stream.isAssociation { associationCount -= 1 }
            giveBackWindowGrowth(stream.tuning.grown)
        }
        stream.isClosed = true
        stream.handler = nil
        streams[stream.id] = nil
    }

    /// The carrier is gone: every stream is reset with `reason` and the session accepts nothing more.
    public func close(_ reason: ResetReason, message: String) {
        guard !isClosed else { return }
        isClosed = true
        datagramPath = nil
        let all = streams.values.sorted { $0.id < $1.id }
        streams.removeAll()
        associationCount = 0
        waiting.removeAll()
        record.removeAll()
        for stream in all {
            giveBackWindowGrowth(stream.tuning.grown)
            let handler = stream.handler
            stream.isClosed = true
            stream.handler = nil
            handler?.stream(stream, didReset: reason, message: message)
        }
    }

    // MARK: receiving

    /// Handles one decrypted record. A thrown error means the carrier must close.
    public func receive(record plaintext: UnsafeRawBufferPointer) throws(MuxError) {
        _ = try receive(record: plaintext, yieldingWhen: { false })
    }

    /// Frames handled between two questions to `shouldYield`.
    public static let framesBetweenYieldChecks = 32

    /// Handles the frames of `plaintext` until `shouldYield` says stop — it is asked after every
    /// `framesBetweenYieldChecks` frames — and returns the number of bytes handled when it stopped
    /// early, nil when it handled the whole record. The caller passes the rest,
    /// `plaintext[returned...]`, later: frames never span records, so it starts with a whole frame.
    /// This lets a carrier share its loop fairly when one record holds thousands of expensive
    /// frames (OPENs, each a connect at the relay). A thrown error means the carrier must close.
    public func receive(record plaintext: UnsafeRawBufferPointer, yieldingWhen shouldYield: () -> Bool) throws(MuxError) -> Int? {
        var decoder = FrameDecoder(plaintext)
        var handled = 0
        while true {
            let frame: DecodedFrame?
            do { frame = try decoder.next() } catch { throw .badFrame("\(error)") }
            guard let frame, !isClosed else { return nil }
            try handle(frame)
            handled += 1
            if handled % Self.framesBetweenYieldChecks == 0, !decoder.isAtEnd, shouldYield() { return decoder.offset }
        }
    }

    private func handle(_ frame: DecodedFrame) throws(MuxError) {
        let first = !receivedFrame
        receivedFrame = true
        switch frame {
        case .data(let id, let payload):
            guard let stream = try liveStream(id, "DATA") else { return }
            guard !stream.receivedFIN, stream.outstanding + payload.count <= stream.receiveWindow else {
                throw .windowExceeded(stream: id)
            }
            stream.outstanding += payload.count
            stream.handler?.stream(stream, didReceive: payload)
        case .datagram(let id, let more, let endpoint, let payload):
            guard let stream = try liveStream(id, "DATAGRAM") else { return datagramForEnded(id) }
            guard stream.isAssociation else { throw .unknownStream(id, frame: "DATAGRAM on a TCP stream") }
            stream.receiveDatagramPiece(more: more, endpoint: endpoint, payload: payload)
        case .control(let control):
            try handle(control, isFirstFrame: first)
        }
    }

    private func handle(_ frame: Frame, isFirstFrame: Bool) throws(MuxError) {
        switch frame {
        case .open(let id, let window, let proto, let destination):
            guard role == .relay else { throw .unexpectedOpen(id) }
            guard id > highestPeerStreamID, id % 2 == 1, !peerGoingAway else { throw .unknownStream(id, frame: "OPEN") }
            guard proto == .tcp || proto == .udp else { throw .badFrame("OPEN for protocol \(proto.rawValue)") }
            highestPeerStreamID = id
            if !openedByPath.isEmpty, try openedOnPath(id, proto: proto) { return }
            let stream = acceptOpen(id, window: window, association: proto == .udp)
            delegate.session(self, didRequest: stream, to: destination)
        case .openOK(let id, let window):
            guard let stream = try liveStream(id, "OPEN_OK") else { return }
            guard !stream.isOpen else { throw .unknownStream(id, frame: "a second OPEN_OK") }
            stream.isOpen = true
            stream.sendCredit = Int(window)
            stream.sendWindow = Int(window)
            stream.handler?.streamDidOpen(stream)
        case .credit(let id, let increment):
            guard let stream = try liveStream(id, "CREDIT") else { return }
            stream.sendCredit += Int(increment)
            // With the carrier full, wake it on drain instead: carrierDrained() drops streams
            // that had no credit, so this one may no longer be waiting.
            if budgetRemaining > 0 { stream.handler?.streamCanSend(stream) } else { waitToSend(stream) }
        case .fin(let id):
            guard let stream = try liveStream(id, "FIN") else { return }
            stream.receivedFIN = true
            stream.handler?.streamDidReceiveFIN(stream)
            closeIfDone(stream)
        case .reset(let id, let reason, let message):
            guard let stream = try liveStream(id, "RESET") else {
                if role == .relay { evictions.clientReset(id) }
                return
            }
            let handler = stream.handler
            remove(stream)
            handler?.stream(stream, didReset: reason, message: message)
        case .ping(let opaque):
            append(.pong(opaque))
        case .pong(let opaque):
            delegate.session(self, didReceivePong: opaque)
        case .goAway(let reason):
            peerGoingAway = true
            if reason != .closed { throw .peerWentAway(reason) }
        case .datagramError(let id, let code, let mtu, let endpoint):
            guard role == .client else { throw .badFrame("DATAGRAM_ERROR from the client") }
            guard let stream = try liveStream(id, "DATAGRAM_ERROR") else { return }
            stream.handler?.stream(stream, datagramTo: endpoint, failed: code, mtu: Int(mtu))
        case .hello(let offered):
            try negotiation.receiveHello(offered, isFirstFrame: isFirstFrame)
            delegate.session(self, didNegotiate: negotiation.inEffect)
        case .udpPath(let index):
            guard role == .client else { throw .unexpectedPathFrame(.udpPath, .wrongEnd) }
            guard features.contains(.udpPath) else { throw .unexpectedPathFrame(.udpPath, .notNegotiated) }
            guard !udpPathOffered else { throw .unexpectedPathFrame(.udpPath, .repeated) }
            udpPathOffered = true
            delegate.session(self, didOfferUDPPath: index)
        case .udpPathUse(let use):
            guard role == .relay else { throw .unexpectedPathFrame(.udpPathUse, .wrongEnd) }
            guard features.contains(.udpPath) else { throw .unexpectedPathFrame(.udpPathUse, .notNegotiated) }
            guard udpPathOffered else { throw .unexpectedPathFrame(.udpPathUse, .notOffered) }
            delegate.session(self, peerUsesUDPPath: use)
        }
    }

    /// Relay: whether the OPEN of `id` finds its association opened by the path already (and
    /// answered then). Forgets the path's opens up to `id`: ids below it whose OPEN never came are
    /// no longer the client's to open.
    private func openedOnPath(_ id: UInt32, proto: IPProtocol) throws(MuxError) -> Bool {
        let opened = openedByPath.contains(id)
        openedByPath.removeThrough(id)
        guard opened else { return false }
        guard proto == .udp else { throw .unknownStream(id, frame: "OPEN of a TCP stream on an id a UDP path datagram opened") }
        return true
    }

    /// The stream `id` if live; nil for one that existed and is closed (late frames are normal);
    /// an error for an id the peer could not know.
    private func liveStream(_ id: UInt32, _ frame: String) throws(MuxError) -> MuxStream? {
        if let stream = streams[id] { return stream }
        let known = role == .client ? id < nextStreamID && id % 2 == 1 : id <= highestPeerStreamID
        if known { return nil }
        throw .unknownStream(id, frame: frame)
    }
}
