import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSocks
import SluiceSystem
import SluiceWire

/// One TCP flow through the SOCKS5 server: a connection of its own with a CONNECT, then the bytes of
/// the flow both ways, as an `UpstreamStream`. Loop-confined.
///
/// Flow control, as a mux stream's: toward the server, `send` takes only what the outbound queue
/// has room for (small writes of a loop turn go out in one `send(2)` at its end; a large one goes
/// straight to the socket); once the kernel's send buffer and the queue are full, the flow's bytes
/// stay in lwIP and its window closes. From the server, the socket is read only while fewer than
/// `window` bytes are delivered and not yet `consumed` (taken by lwIP for the application), so a
/// slow application leaves the bytes in the server's TCP window, not in memory.
final class SocksStream: SocksConnection, UpstreamStream {
    /// Bytes accepted by `send` and not yet written to the socket, at most.
    static let outboundLimit = 64 * 1024
    /// A chunk this large is written at once rather than copied into the queue first.
    static let directWrite = 16 * 1024

    var handler: UpstreamStreamHandler?
    let destination: SocksAddress
    private let window: Int
    private let outbound = ByteQueue(capacity: 0)
    private var isOpen = false
    private var readable = false
    private var writable = true
    private var outstanding = 0
    private var finishRequested = false
    private var shutWrite = false
    private var sawEOF = false
    private var wantsSend = false
    private var flushScheduled = false
    private var readScheduled = false

    init(upstream: SocksUpstream, destination: SocksAddress, handler: UpstreamStreamHandler) throws(SocksDialFailure) {
        self.destination = destination
        self.handler = handler
        window = upstream.window
        try super.init(upstream: upstream, request: SocksRequest(command: .connect, address: destination))
    }

    // MARK: the handshake's end

    override func handshakeReplied(_ reply: SocksReply, leftover: UnsafeRawBufferPointer) {
        guard reply.code == .succeeded else {
            closeSocket(reset: false)
            upstream.streamEnded(self)
            let reason = ResetReason(socksReply: reply.code)
            Log.debug("SOCKS5 CONNECT \(destination) refused by \(upstream.server): \(reply.code)", "tunnel")
            return end(reason, "\(upstream.server): \(reply.code)")
        }
        isOpen = true
        handler?.upstreamStreamDidOpen(self)
        if !leftover.isEmpty { deliver(leftover) }
    }

    override func handshakeFailed(_ failure: SocksDialFailure, requestSent: Bool) {
        upstream.streamEnded(self)
        guard !requestSent else {
            // The server took greeting and credentials and the request: a silence or a close now is
            // its answer about the destination (some servers close instead of replying), not a
            // sign that the server is down.
            return end(failure.isTimeout ? .timedOut : .unreachable, "\(failure)")
        }
        upstream.serverFailed(failure)
        end(.unreachable, "\(failure)")
    }

    // MARK: UpstreamStream: toward the server

    var sendCapacity: Int {
        guard isOpen, !finishRequested, !closed else { return 0 }
        return max(0, Self.outboundLimit - outbound.count)
    }

    var worthwhileSendCapacity: Int {
        let capacity = sendCapacity
        return capacity >= Self.outboundLimit / 4 ? capacity : 0
    }

    func send(_ bytes: UnsafeRawBufferPointer) -> Int {
        let room = sendCapacity
        guard room > 0 else {
            wantsSend = isOpen && !closed
            return 0
        }
        var taken = 0
        if outbound.isEmpty && writable && bytes.count >= Self.directWrite {
            taken = write(bytes)
            if closed { return taken }
        }
        let queued = min(bytes.count - taken, room)
        if queued > 0 {
            outbound.append(UnsafeRawBufferPointer(rebasing: bytes[taken..<taken + queued]))
            scheduleFlush()
        }
        taken += queued
        if taken < bytes.count { wantsSend = true }
        return taken
    }

    func notifyWhenSendable() { wantsSend = true }

    func finish() {
        guard !finishRequested else { return }
        finishRequested = true
        flushOutbound()
    }

    /// The path to the server changed under the connection: it ends, and the flow is reset.
    func abandon(because why: String) {
        if !closed { fail(why) }
    }

    func reset() {
        handler = nil
        guard !closed else { return }
        closeSocket(reset: true)
        upstream.streamEnded(self)
    }

    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        upstream.loop.afterTurn { self.flushOutbound() }  // strong: runs once, this turn
    }

    /// Writes `bytes` to the socket now; what it took (a failure ends the stream).
    private func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        do {
            switch try socket.write(bytes) {
            case .done(let n):
                upstream.bytesSent += n
                return n
            case .wouldBlock:
                writable = false
                return 0
            }
        } catch {
            fail("write to \(upstream.server): \(error)")
            return 0
        }
    }

    private func flushOutbound() {
        flushScheduled = false
        guard !closed else { return }
        while writable && !outbound.isEmpty {
            let n = write(outbound.readableBytes)
            if closed { return }
            outbound.consume(n)
        }
        if outbound.isEmpty && finishRequested && !shutWrite {
            shutWrite = true
            socket.shutdownWrite()
            closeIfDone()
            return
        }
        if wantsSend && sendCapacity > 0 {
            wantsSend = false
            handler?.upstreamStreamCanSend(self)
        }
    }

    // MARK: from the server

    override func socketEvents(_ events: IOEvents) {
        if events.contains(.writable) {
            writable = true
            flushOutbound()
        }
        if events.contains(.readable) || events.contains(.readHangup) || events.contains(.error) || events.contains(.hangup) {
            readable = true
            readAvailable()
        }
    }

    func consumed(_ count: Int) {
        guard !closed, count > 0 else { return }
        outstanding -= count
        // Not read here: the handler is in the middle of its own work. Later this turn.
        if readable && !sawEOF && !readScheduled {
            readScheduled = true
            upstream.loop.afterTurn { self.readScheduled = false; self.readAvailable() }
        }
    }

    private func readAvailable() {
        while readable && !sawEOF && !closed && isOpen {
            let room = min(window - outstanding, upstream.scratch.count)
            // Wait for a worthwhile read rather than reading slivers as lwIP drains.
            guard room >= min(16 * 1024, window / 4) else { return }
            let result: IOResult<Int>
            do {
                result = try upstream.scratch.withUnsafeMutableBytes { try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<room])) }
            } catch {
                return fail("read from \(upstream.server): \(error)")
            }
            switch result {
            case .wouldBlock:
                readable = false
            case .done(0):
                sawEOF = true
                handler?.upstreamStreamDidReceiveFIN(self)
                closeIfDone()
            case .done(let n):
                upstream.bytesReceived += n
                upstream.scratch.withUnsafeBytes { deliver(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            }
        }
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer) {
        outstanding += bytes.count
        handler?.upstreamStream(self, didReceive: bytes)
    }

    // MARK: the end

    private func closeIfDone() {
        guard sawEOF && shutWrite && !closed else { return }
        closeSocket(reset: false)
        upstream.streamEnded(self)
    }

    private func fail(_ message: String) {
        closeSocket(reset: true)
        upstream.streamEnded(self)
        end(.closed, message)
    }

    private func end(_ reason: ResetReason, _ message: String) {
        let h = handler
        handler = nil
        h?.upstreamStream(self, didEnd: reason, message: message)
    }
}

extension ResetReason {
    /// What a SOCKS5 reply that is not `succeeded` means for the flow (and which
    /// `tcp-refused-by-relay-*` counter shows it).
    init(socksReply code: SocksReplyCode) {
        switch code {
        case .connectionRefused, .notAllowed: self = .refused
        case .networkUnreachable, .hostUnreachable, .generalFailure: self = .unreachable
        case .ttlExpired: self = .timedOut
        default: self = .protocolError  // command or address type not supported, unassigned codes
        }
    }
}
