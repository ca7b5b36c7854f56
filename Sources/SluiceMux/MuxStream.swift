import SluiceWire

/// What a stream reports to the endpoint that carries it (an lwIP flow on the client, a socket on the
/// relay). Called on the carrier's loop thread.
public protocol MuxStreamHandler: AnyObject {
    /// Client side: the relay reached the destination (OPEN_OK).
    func streamDidOpen(_ stream: MuxStream)
    /// Bytes from the peer. The handler must take them all (buffering what it cannot pass on yet: the
    /// window bounds it) and call `consumed(_:)` as they leave toward the next hop. They are valid
    /// during the call; where the session is a `Carrier`'s, until its `onRecordsDelivered`.
    func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer)
    /// The peer will send no more data (FIN), after everything already delivered.
    func streamDidReceiveFIN(_ stream: MuxStream)
    /// The stream was reset by the peer, or because its carrier died. No more calls follow.
    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String)
    /// `send(_:)` may accept bytes again (credit arrived, or the carrier drained).
    func streamCanSend(_ stream: MuxStream)
    /// UDP association: one whole datagram; `endpoint` is its destination (relay side) or its source
    /// (client side). The bytes are valid only during the call.
    func stream(_ stream: MuxStream, didReceiveDatagram payload: UnsafeRawBufferPointer, endpoint: SocketEndpoint)
    /// UDP association, client side: a datagram the relay sent to `endpoint` failed.
    func stream(_ stream: MuxStream, datagramTo endpoint: SocketEndpoint, failed code: DatagramErrorCode, mtu: Int)
}

/// Defaults so that a TCP endpoint need not implement the datagram calls, nor a UDP endpoint the
/// byte-stream ones: each kind of stream only ever receives its own.
extension MuxStreamHandler {
    public func streamDidOpen(_ stream: MuxStream) {}
    public func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer) {}
    public func streamDidReceiveFIN(_ stream: MuxStream) {}
    public func streamCanSend(_ stream: MuxStream) {}
    public func stream(_ stream: MuxStream, didReceiveDatagram payload: UnsafeRawBufferPointer, endpoint: SocketEndpoint) {}
    public func stream(_ stream: MuxStream, datagramTo endpoint: SocketEndpoint, failed code: DatagramErrorCode, mtu: Int) {}
}

/// One flow multiplexed on a carrier. Loop-confined, like its session.
///
/// Flow control: `send(_:)` takes at most the credit the peer granted (its window minus what it has
/// not yet returned) and at most the carrier's remaining budget; the receiver returns credit only as
/// bytes leave it (`consumed(_:)`). A stalled reader therefore stops only its own stream.
public final class MuxStream {
    public let id: UInt32
    public unowned let session: MuxSession
    public var handler: MuxStreamHandler?

    /// Bytes we may still send before the peer returns credit.
    public internal(set) var sendCredit: Int
    /// The window the peer announced (OPEN, OPEN_OK): all the credit there is.
    public internal(set) var sendWindow: Int
    /// Window we granted the peer (grown for a bulk stream, `ReceiveWindowTuning`) and bytes received
    /// but not yet returned as credit.
    var receiveWindow: Int { tuning.window }
    var tuning: ReceiveWindowTuning
    var outstanding = 0
    var creditToReturn = 0

    public internal(set) var isOpen = false
    public internal(set) var sentFIN = false
    public internal(set) var receivedFIN = false
    public internal(set) var isClosed = false
    var waitingToSend = false
    /// A UDP association (OPEN with protocol 17): datagrams, no byte stream, no credit.
    public let isAssociation: Bool
    /// A datagram arriving in several DATAGRAM frames, until its last piece.
    private var partialDatagram: [UInt8] = []
    private var partialEndpoint: SocketEndpoint?

    init(id: UInt32, session: MuxSession, sendCredit: Int, receiveWindow: Int, isAssociation: Bool = false) {
        self.id = id
        self.session = session
        self.sendCredit = sendCredit
        sendWindow = sendCredit
        tuning = ReceiveWindowTuning(window: receiveWindow, maximum: session.settings.maxStreamWindow)
        self.isAssociation = isAssociation
    }

    /// UDP association: sends one datagram to (client) or from (relay) `endpoint`. Returns false, and
    /// sends nothing, when the carrier has no room for it: datagrams are dropped, never queued.
    public func sendDatagram(_ payload: UnsafeRawBufferPointer, endpoint: SocketEndpoint) -> Bool {
        guard isAssociation, !isClosed else { return false }
        return session.encodeDatagram(stream: self, endpoint: endpoint, payload)
    }

    /// UDP association, relay side: tells the client that a datagram to `endpoint` failed.
    public func sendDatagramError(_ code: DatagramErrorCode, mtu: Int = 0, endpoint: SocketEndpoint) {
        guard isAssociation, !isClosed else { return }
        session.encodeDatagramError(stream: self, code, mtu: mtu, endpoint: endpoint)
    }

    /// Reassembles a datagram from its frames; a whole one in one frame goes up without a copy.
    func receiveDatagramPiece(more: Bool, endpoint: SocketEndpoint?, payload: UnsafeRawBufferPointer) {
        if let endpoint {
            partialDatagram.removeAll(keepingCapacity: true)
            if !more {
                partialEndpoint = nil
                handler?.stream(self, didReceiveDatagram: payload, endpoint: endpoint)
                return
            }
            partialEndpoint = endpoint
        } else if partialEndpoint == nil {
            return  // a continuation without its start: the start was lost with a dropped frame
        }
        partialDatagram.append(contentsOf: payload)
        guard !more, let start = partialEndpoint else { return }
        partialEndpoint = nil
        partialDatagram.withUnsafeBytes { handler?.stream(self, didReceiveDatagram: $0, endpoint: start) }
        partialDatagram.removeAll(keepingCapacity: false)
    }

    /// Bytes `send(_:)` would take now.
    public var sendCapacity: Int {
        guard isOpen, !sentFIN, !isClosed else { return 0 }
        return min(sendCredit, session.budgetRemaining)
    }

    /// The smallest send `worthwhileSendCapacity` waits for, where window and budget allow it.
    public static let worthwhileSend = 16 * 1024

    /// `sendCapacity`, or zero while that is below a worthwhile send: 16 KiB, or a quarter of the
    /// peer's window or of the carrier budget where those are smaller. For endpoints that read their
    /// source only for what they can send (sender-side silly-window avoidance). Credit comes back in
    /// quarter windows that rarely end on a read's size: the relay read the leftovers — 31, 69, 107
    /// bytes — with a syscall and a DATA frame each between its full reads. Waiting cannot stall: a
    /// peer that has consumed everything holds back less than a quarter of its window (`consumed`),
    /// so three quarters are there to send, and the carrier drains whole.
    public var worthwhileSendCapacity: Int {
        let capacity = sendCapacity
        let threshold = min(Self.worthwhileSend, sendWindow / 4, session.settings.carrierBudget / 4)
        return capacity >= threshold ? capacity : 0
    }

    /// Sends as many bytes as credit and the carrier budget allow; returns the number taken. When it
    /// takes fewer than offered, `streamCanSend` follows once more can be taken.
    public func send(_ bytes: UnsafeRawBufferPointer) -> Int {
        let n = min(bytes.count, sendCapacity)
        if n > 0 {
            returnCredit()
            session.encodeData(stream: self, UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
            sendCredit -= n
        }
        if n < bytes.count && !isClosed { session.waitToSend(self) }
        return n
    }

    /// `send(_:)` without the copy, for bytes still in a socket: `fill` writes them straight into the
    /// record being assembled (e.g. with `read(2)`) and returns how many it wrote. It gets room for
    /// at most `maximum` bytes — fewer where one DATA frame or the record's room ends first — and
    /// `maximum` must be 1...`sendCapacity` (check `worthwhileSendCapacity` first). Returns what
    /// `fill` returned; zero or less (EOF, nothing to read) sends nothing. `fill` must not touch this
    /// session: the room is part of the record it assembles.
    public func send<E: Error>(upTo maximum: Int,
                               filling fill: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) -> Int {
        precondition(maximum >= 1 && maximum <= sendCapacity, "send(upTo: \(maximum)) with \(sendCapacity) sendable")
        returnCredit()  // before the room is handed out: a frame appended after it would overwrite it
        let n = try session.encodeData(stream: self, upTo: maximum, filling: fill)
        if n > 0 { sendCredit -= n }
        return n
    }

    /// Asks for `streamCanSend` once `sendCapacity` is above zero again: for an endpoint that checks
    /// the capacity before reading its source (so it never offers bytes `send` would refuse).
    public func notifyWhenSendable() {
        guard !isClosed, !sentFIN else { return }
        session.waitToSend(self)
    }

    /// `count` received bytes left this end toward the next hop; credit goes back to the peer in
    /// batches of a quarter window. Less than that waits for the next frame this stream sends anyway
    /// (DATA or FIN) and rides in its record: the peer never waits for it, since with less than a
    /// quarter window unreturned it can still send three quarters, more than any send it waits for
    /// (`worthwhileSendCapacity`). A request/response exchange so returns its credit with the next
    /// request, not in a record of its own that costs each end a write or a wake-up per exchange.
    public func consumed(_ count: Int) {
        guard !isClosed, count > 0 else { return }
        outstanding -= count
        creditToReturn += count
        let growth = tuning.consumed(count, outstanding: outstanding) { session.takeWindowGrowth(upTo: $0) }
        creditToReturn += growth  // when not 0, more than a quarter of the new window: it goes at once
        if creditToReturn >= receiveWindow / 4 { returnCredit() }
    }

    /// Sends the credit held back so far (CREDIT), if any.
    private func returnCredit() {
        guard creditToReturn > 0 else { return }
        session.encodeCredit(stream: self, creditToReturn)
        creditToReturn = 0
    }

    /// Half-closes our direction: the peer gets FIN after the data already sent.
    public func finish() {
        guard !sentFIN, !isClosed else { return }
        sentFIN = true
        returnCredit()  // so that the peer knows, at our FIN, everything we consumed (`sluice bench`)
        session.encodeFIN(stream: self)
        session.closeIfDone(self)
    }

    /// Aborts the stream; the peer resets its end. No handler calls follow.
    ///
    /// `urgent` false is for a RESET no one waits on: the client's end of a UDP association whose
    /// mapping it closed (idle, or evicted at its cap). It rides the carrier's next record, due
    /// within `MuxSettings.deferredFlushMilliseconds`, instead of a record of its own: at the cap
    /// every new socket evicts a mapping, and a record each would cost a write and a read per new
    /// socket while its first answer is on its way.
    public func reset(_ reason: ResetReason, message: String = "", urgent: Bool = true) {
        guard !isClosed else { return }
        session.encodeReset(stream: id, reason, message: message, urgent: urgent)
        session.remove(self)
    }

    /// Relay side: closes a UDP association evicted at the client's cap. Its RESET goes at once, or
    /// with the carrier's next record where the client evicts at its own cap too
    /// (`MuxSession.evictionResetsWait`, docs/protocol.md §6, item 5).
    public func evict(message: String) {
        guard !isClosed else { return }
        session.encodeEviction(stream: id, message: message)
        session.remove(self)
    }

    /// Relay side: the destination is connected; lets the client's application in.
    public func accept() {
        guard !isOpen, !isClosed else { return }
        isOpen = true
        session.encodeOpenOK(stream: self)
    }
}
