import SluiceCarrier
import SluiceMux
import SluiceSystem

/// One stream of `sluice bench` to a relay's bench endpoint. Loop-confined.
///
/// Upload (to discard): sends from the one preallocated `BenchService.pattern` as far as
/// `send` takes it — the relay's credit and the carrier's budget, as a real flow would — and is
/// woken by `streamCanSend` for more. Download (from chargen): counts and drops what arrives and
/// returns it as credit at once, so the relay is limited only by the carrier.
///
/// `stop()` sends FIN; the relay answers with its FIN once it has everything (in order after
/// its last CREDIT or DATA), which ends the stream.
final class BenchStream: MuxStreamHandler {
    let direction: BenchDirection
    private unowned let phase: BenchPhase
    private var stream: MuxStream?
    /// When OPEN was sent, and the OPEN to OPEN_OK time once it arrived.
    private var openSent: UInt64 = 0
    private(set) var openNanoseconds: UInt64?
    /// Upload: bytes handed to the stream. Download: bytes received.
    private(set) var bytes = 0
    /// The relay's window at OPEN_OK: credit beyond it means the relay consumed that much.
    private var peerWindow = 0
    private(set) var isDone = false

    init(direction: BenchDirection, phase: BenchPhase) {
        self.direction = direction
        self.phase = phase
    }

    func open(on carrier: Carrier) {
        openSent = MonotonicClock.nanoseconds()
        stream = carrier.session.open(to: direction.service.destination, handler: self)
    }

    /// Bytes the relay is known to have taken: for upload what it returned as credit (or all, once
    /// it sent FIN), for download what arrived.
    var confirmedBytes: Int {
        guard direction == .up, !isDone, let stream, stream.isOpen else { return isDone || direction == .down ? bytes : 0 }
        return max(0, bytes - (peerWindow - stream.sendCredit))
    }

    /// Ends our direction (FIN): upload stops sending, download asks chargen to stop.
    func stop() {
        guard let stream, !stream.sentFIN else { return }
        stream.finish()
    }

    /// Drops the stream at once (RESET), after a failure elsewhere.
    func abort() {
        stream?.handler = nil
        stream?.reset(.closed)
        stream = nil
    }

    // MARK: MuxStreamHandler

    func streamDidOpen(_ stream: MuxStream) {
        openNanoseconds = MonotonicClock.nanoseconds() - openSent
        peerWindow = stream.sendCredit
        phase.streamOpened(self)
        if direction == .up { pump() }
    }

    func streamCanSend(_ stream: MuxStream) { pump() }

    private func pump() {
        guard let stream, direction == .up else { return }
        while stream.sendCapacity > 0 {
            let sent = BenchService.pattern.withUnsafeBytes { stream.send($0) }
            bytes += sent
            if sent < BenchService.pattern.count { return }  // send() asked for streamCanSend
        }
        stream.notifyWhenSendable()
    }

    func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer) {
        bytes += data.count
        stream.consumed(data.count)
    }

    func streamDidReceiveFIN(_ stream: MuxStream) {
        stream.finish()  // no-op after stop(); ends the stream if the relay finished first
        isDone = true
        self.stream = nil
        phase.streamFinished(self)
    }

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {
        self.stream = nil
        if stream.session.isClosed {
            phase.fail(.carrierLost(message))  // the whole carrier went, not this stream
        } else {
            phase.fail(.refused(direction.service, reason, message: message))
        }
    }
}
