import CLwIP
import CSluiceShims

/// What a `TCPFlow` reports to whoever carries it onward. Called on the stack thread.
public protocol TCPFlowHandler: AnyObject {
    /// New bytes (or the application's FIN) are ready: call `read(_:)`, then check `inputEnded`.
    func flowHasInput(_ flow: TCPFlow)
    /// lwIP freed send space: `write(_:)` may accept more.
    func flowCanWrite(_ flow: TCPFlow)
    /// The application reset the connection, or lwIP gave up on it. The flow is dead.
    func flowDidReset(_ flow: TCPFlow)
}

/// One application TCP connection terminated in lwIP. Stack thread only.
///
/// Backpressure: bytes from the application stay in lwIP's pbufs until the handler consumes them
/// with `read(_:)`; only then is lwIP's receive window opened (`tcp_recved`). Bytes toward the
/// application are accepted by `write(_:)` only as far as lwIP's send buffer has room.
public final class TCPFlow {
    public let key: FlowKey
    unowned let stack: TCPStack
    private(set) var pcb: UnsafeMutablePointer<tcp_pcb>?
    public var handler: TCPFlowHandler?

    private var inbound: [UnsafeMutablePointer<pbuf>] = []
    private var inboundOffset = 0
    private var finReceived = false
    private(set) var outputShut = false
    /// Queued for `TCPStack.flushOutput` at the end of this turn.
    var needsOutput = false
    /// Bytes read since the last `tcp_recved`: the window opens once per loop turn, in
    /// `TCPStack.flushOutput`, because lwIP answers every `tcp_recved` that opens it by 4 MSS or more
    /// with an ACK at once — one TUN write per 64 KiB super-segment read.
    var unopenedWindow = 0

    init(key: FlowKey, pcb: UnsafeMutablePointer<tcp_pcb>, stack: TCPStack) {
        self.key = key
        self.pcb = pcb
        self.stack = stack
    }

    /// Input kept past the pcb (see `shutdownOutput`) and never read.
    deinit { for p in inbound { pbuf_free(p) } }

    /// True once the application sent FIN and every byte before it was read.
    public var inputEnded: Bool { finReceived && inbound.isEmpty }

    /// True while lwIP still holds the connection.
    public var isAlive: Bool { pcb != nil }

    /// Offers received bytes to `consume` in order, chunk by chunk; `consume` returns how many it took
    /// (fewer than offered means "no more room now"). Opens lwIP's window by what was taken.
    @discardableResult
    public func read(_ consume: (UnsafeRawBufferPointer) -> Int) -> Int {
        var total = 0
        outer: while let head = inbound.first {
            var q: UnsafeMutablePointer<pbuf>? = head
            var skip = inboundOffset
            while let seg = q {
                let len = Int(seg.pointee.len)
                if skip >= len {
                    skip -= len
                    q = seg.pointee.next
                    continue
                }
                let chunk = UnsafeRawBufferPointer(start: seg.pointee.payload! + skip, count: len - skip)
                let taken = consume(chunk)
                total += taken
                inboundOffset += taken
                if taken < chunk.count { break outer }
                skip = 0
                q = seg.pointee.next
            }
            inbound.removeFirst()
            inboundOffset = 0
            pbuf_free(head)
        }
        if total > 0, pcb != nil {
            unopenedWindow += total
            markNeedsOutput()
        }
        return total
    }

    /// `tcp_recved` for the bytes read since the last call, in the u16 steps it takes.
    func openWindow() {
        guard unopenedWindow > 0, let pcb else { return }
        var left = unopenedWindow
        unopenedWindow = 0
        while left > 0 {
            let n = min(left, 0xFFFF)
            tcp_recved(pcb, UInt16(n))
            left -= n
        }
    }

    /// Bytes lwIP can take now toward the application.
    public var writableBytes: Int {
        guard let pcb, !outputShut else { return 0 }
        let queueLimit = Int(sluice_tcp_sndqueuelen_max())
        let queued = Int(sluice_tcp_sndqueuelen(pcb))
        guard queued + 4 < queueLimit else { return 0 }
        let bySegments = (queueLimit - queued - 4) * Int(sluice_tcp_mss(pcb))
        return min(Int(sluice_tcp_sndbuf(pcb)), bySegments)
    }

    /// Queues bytes toward the application; returns how many lwIP accepted (copied).
    public func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard let pcb, let base = bytes.baseAddress else { return 0 }
        // lwIP's sum of what it copies would be overwritten on the way out (`TCPStack.leavesDataChecksums`).
        if stack.leavesDataChecksums { sluice_checksum_skip(1) }
        defer { if stack.leavesDataChecksums { sluice_checksum_skip(0) } }
        var offset = 0
        var room = writableBytes
        while offset < bytes.count && room > 0 {
            let n = min(bytes.count - offset, room, 0xFFFF)
            let more = offset + n < bytes.count ? UInt8(TCP_WRITE_FLAG_MORE) : 0
            let err = tcp_write(pcb, base + offset, UInt16(n), UInt8(TCP_WRITE_FLAG_COPY) | more)
            if err != err_t(ERR_OK.rawValue) { break }
            offset += n
            room -= n
        }
        if offset > 0 { markNeedsOutput() }
        return offset
    }

    /// Sends FIN to the application after the queued bytes (half-close toward it).
    public func shutdownOutput() {
        guard let pcb, !outputShut else { return }
        outputShut = true
        if finReceived {
            // Both directions are done: a full close lets lwIP finish and free the pcb itself.
            // Input not read yet stays readable (the pbufs are ours); lwIP is told it was taken,
            // or tcp_close would answer the unread bytes with RST.
            unopenedWindow += unreadCount
            openWindow()
            release(keepingInput: true)
            handler = nil
            tcp_close(pcb)
        } else {
            tcp_shutdown(pcb, 0, 1)
            markNeedsOutput()
        }
    }

    /// Both directions finished on our side: hand the pcb to lwIP to close gracefully.
    public func close() {
        guard let pcb else { return }
        release()
        handler = nil
        if tcp_close(pcb) != err_t(ERR_OK.rawValue) { tcp_abort(pcb) }
    }

    /// Resets the application's connection (RST).
    public func abort() {
        guard let pcb else { return }
        release()
        handler = nil
        tcp_abort(pcb)
    }

    /// Forgets the pcb (lwIP keeps or frees it) and, unless `keepingInput`, every buffered byte;
    /// removes the flow from the stack.
    private func release(keepingInput: Bool = false) {
        if let pcb { sluice_tcp_detach(pcb) }
        pcb = nil
        if !keepingInput {
            for p in inbound { pbuf_free(p) }
            inbound.removeAll()
        }
        stack.forget(self)
    }

    private func markNeedsOutput() {
        if !needsOutput {
            needsOutput = true
            stack.scheduleOutput(self)
        }
    }

    // MARK: lwIP callbacks (via TCPStack+Callbacks)

    func lwipReceived(_ p: UnsafeMutablePointer<pbuf>?) {
        if let p {
            inbound.append(p)
            // The end of this turn acknowledges what arrived (`TCPStack.flushOutput`), once.
            if let pcb { sluice_tcp_defer_ack(pcb) }
            markNeedsOutput()
        } else {
            finReceived = true
            if outputShut, pcb != nil {
                // Both FINs are out: lwIP now frees the pcb on its own (TIME_WAIT, without any
                // callback), so let go of it now and keep the unread input readable.
                unopenedWindow += unreadCount
                openWindow()
                release(keepingInput: true)
            }
        }
        handler?.flowHasInput(self)
    }

    private var unreadCount: Int { inbound.reduce(-inboundOffset) { $0 + Int($1.pointee.tot_len) } }

    func lwipSent() { handler?.flowCanWrite(self) }

    /// lwIP already freed the pcb (RST received, or it aborted the connection).
    func lwipFailed() {
        pcb = nil
        release()
        let h = handler
        handler = nil
        h?.flowDidReset(self)
    }
}
