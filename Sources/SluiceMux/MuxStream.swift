/// What a stream reports to the endpoint that carries it (an lwIP flow on the client, a socket on the
/// relay). Called on the carrier's loop thread.
public protocol MuxStreamHandler: AnyObject {
    /// Client side: the relay reached the destination (OPEN_OK).
    func streamDidOpen(_ stream: MuxStream)
    /// Bytes from the peer. The handler must take them all (buffering what it cannot pass on yet: the
    /// window bounds it) and call `consumed(_:)` as they leave toward the next hop.
    func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer)
    /// The peer will send no more data (FIN), after everything already delivered.
    func streamDidReceiveFIN(_ stream: MuxStream)
    /// The stream was reset by the peer, or because its carrier died. No more calls follow.
    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String)
    /// `send(_:)` may accept bytes again (credit arrived, or the carrier drained).
    func streamCanSend(_ stream: MuxStream)
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
    var sendCredit: Int
    /// Window we granted the peer and bytes received but not yet returned as credit.
    let receiveWindow: Int
    var outstanding = 0
    var creditToReturn = 0

    public internal(set) var isOpen = false
    public internal(set) var sentFIN = false
    public internal(set) var receivedFIN = false
    public internal(set) var isClosed = false
    var waitingToSend = false

    init(id: UInt32, session: MuxSession, sendCredit: Int, receiveWindow: Int) {
        self.id = id
        self.session = session
        self.sendCredit = sendCredit
        self.receiveWindow = receiveWindow
    }

    /// Bytes `send(_:)` would take now.
    public var sendCapacity: Int {
        guard isOpen, !sentFIN, !isClosed else { return 0 }
        return min(sendCredit, session.budgetRemaining)
    }

    /// Sends as many bytes as credit and the carrier budget allow; returns the number taken. When it
    /// takes fewer than offered, `streamCanSend` follows once more can be taken.
    public func send(_ bytes: UnsafeRawBufferPointer) -> Int {
        let n = min(bytes.count, sendCapacity)
        if n > 0 {
            session.encodeData(stream: self, UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
            sendCredit -= n
        }
        if n < bytes.count && !isClosed { session.waitToSend(self) }
        return n
    }

    /// Asks for `streamCanSend` once `sendCapacity` is above zero again: for an endpoint that checks
    /// the capacity before reading its source (so it never offers bytes `send` would refuse).
    public func notifyWhenSendable() {
        guard !isClosed, !sentFIN else { return }
        session.waitToSend(self)
    }

    /// `count` received bytes left this end toward the next hop; credit goes back to the peer in
    /// batches of a quarter window.
    public func consumed(_ count: Int) {
        guard !isClosed, count > 0 else { return }
        outstanding -= count
        creditToReturn += count
        if creditToReturn >= receiveWindow / 4 || outstanding == 0 {
            session.encodeCredit(stream: self, creditToReturn)
            creditToReturn = 0
        }
    }

    /// Half-closes our direction: the peer gets FIN after the data already sent.
    public func finish() {
        guard !sentFIN, !isClosed else { return }
        sentFIN = true
        session.encodeFIN(stream: self)
        session.closeIfDone(self)
    }

    /// Aborts the stream; the peer resets its end. No handler calls follow.
    public func reset(_ reason: ResetReason, message: String = "") {
        guard !isClosed else { return }
        session.encodeReset(stream: id, reason, message: message)
        session.remove(self)
    }

    /// Relay side: the destination is connected; lets the client's application in.
    public func accept() {
        guard !isOpen, !isClosed else { return }
        isOpen = true
        session.encodeOpenOK(stream: self)
    }
}
