import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSocks
import SluiceSystem
import SluiceWire

/// One UDP mapping through the SOCKS5 server (RFC 1928 §7): a TCP control connection with UDP
/// ASSOCIATE, kept open for the association's life, and a UDP socket of its own that sends every
/// datagram, with its header, to the server's relay address (BND.ADDR:BND.PORT) and receives the
/// answers from any remote endpoint the server lets through (full cone as far as the server
/// allows). Loop-confined.
///
/// Datagrams sent before the server has replied wait in a small queue (a DNS query must not be lost
/// to the handshake's round trips); past its bound they are dropped, as a full carrier drops them.
final class SocksAssociation: SocksConnection, UpstreamAssociation {
    /// Datagrams (and their bytes) held while the association is being set up, at most.
    static let pendingLimit = 32
    static let pendingBytesLimit = 64 * 1024

    var handler: UpstreamAssociationHandler?
    private var udp: Socket?
    private var pending: [(payload: [UInt8], to: SocketEndpoint)] = []
    private var pendingBytes = 0
    private(set) var isClosed = false

    init(upstream: SocksUpstream, handler: UpstreamAssociationHandler) throws(SocksDialFailure) {
        self.handler = handler
        // DST of UDP ASSOCIATE is where the client will send from; 0.0.0.0:0 says "not known yet"
        // (RFC 1928 §7), since the socket's address and port come with its first datagram.
        try super.init(upstream: upstream, request: SocksRequest(command: .udpAssociate, address: .unspecifiedIPv4))
    }

    // MARK: UpstreamAssociation

    func send(_ payload: UnsafeRawBufferPointer, to endpoint: SocketEndpoint) -> DatagramSendResult {
        guard !isClosed else { return .full }
        guard let udp else {
            guard pending.count < Self.pendingLimit, pendingBytes + payload.count <= Self.pendingBytesLimit else { return .full }
            pending.append((Array(payload), endpoint))
            pendingBytes += payload.count
            return .sent
        }
        return transmit(payload, to: endpoint, on: udp)
    }

    func close() {
        handler = nil
        end(notify: false)
    }

    /// The path to the server changed under the association: it ends (the mapping opens a new one
    /// with its next datagram).
    func abandon() { end(notify: true) }

    // MARK: the handshake's end

    override func handshakeReplied(_ reply: SocksReply, leftover: UnsafeRawBufferPointer) {
        guard reply.code == .succeeded else {
            if reply.code == .commandNotSupported {
                upstream.udpNotSupported(why: "it answers UDP ASSOCIATE with \(SocksReplyCode.commandNotSupported)")
                upstream.countDrop("udp-upstream-unsupported", pending.count)
            } else {
                Log.debug("SOCKS5 UDP ASSOCIATE refused by \(upstream.server): \(reply.code)", "tunnel")
                upstream.countDrop("udp-upstream-refused", pending.count)
            }
            return end(notify: true)
        }
        // BND.ADDR 0.0.0.0 or :: means "the address you reached me at" (common practice).
        var relay = reply.bound.endpoint ?? upstream.server.endpoint
        if relay.address == .v4(0) || relay.address == .v6(0, 0) {
            relay = SocketEndpoint(address: upstream.server.endpoint.address, port: relay.port)
        }
        do throws(SystemError) {
            let socket = try upstream.transport.udpSocket(for: relay.address)
            try socket.closingOnFailure { () throws(SystemError) in
                // Connected: only the server's relay address gets through to this socket.
                try socket.connect(to: relay)
                try upstream.loop.register(fd: socket.fd, events: [.readable, .edgeTriggered]) { [unowned self] _ in self.receive() }
            }
            udp = socket
        } catch {
            Log.warning("SOCKS5 UDP association: \(error)", "tunnel")
            upstream.countDrop("udp-upstream-refused", pending.count)
            return end(notify: true)
        }
        let held = pending
        pending = []
        pendingBytes = 0
        for datagram in held where !isClosed {
            if datagram.payload.withUnsafeBytes({ transmit($0, to: datagram.to, on: udp!) }) == .full {
                upstream.countDrop("udp-carrier-full", 1)
            }
        }
    }

    override func handshakeFailed(_ failure: SocksDialFailure, requestSent: Bool) {
        if requestSent, case .closed = failure {
            // Closing in answer to UDP ASSOCIATE is how some servers without UDP say so (OpenSSH's
            // ssh -D): taken as "command not supported", not as the server being down.
            upstream.udpNotSupported(why: "it closed the connection in answer to UDP ASSOCIATE")
            upstream.countDrop("udp-upstream-unsupported", pending.count)
        } else {
            upstream.countDrop("udp-no-carrier", pending.count)
            if !requestSent { upstream.serverFailed(failure) }
        }
        end(notify: true)
    }

    /// The control connection: the server sends nothing on it; its end ends the association.
    override func socketEvents(_ events: IOEvents) {
        guard events.contains(.readable) || events.contains(.readHangup) || events.contains(.hangup) || events.contains(.error) else { return }
        var sink = [UInt8](repeating: 0, count: 256)
        while !isClosed {
            switch (try? sink.withUnsafeMutableBytes { try socket.read(into: $0) }) ?? .done(0) {
            case .wouldBlock: return
            case .done(0): return end(notify: true)
            case .done: continue
            }
        }
    }

    // MARK: datagrams

    private func transmit(_ payload: UnsafeRawBufferPointer, to endpoint: SocketEndpoint, on udp: Socket) -> DatagramSendResult {
        upstream.scratch.withUnsafeMutableBytes { buffer in
            guard let header = SocksUDPHeader.write(ipSource: SocksAddress(endpoint), into: buffer),
                  header + payload.count <= buffer.count else { return .full }
            if let base = payload.baseAddress { (buffer.baseAddress! + header).copyMemory(from: base, byteCount: payload.count) }
            let datagram = UnsafeRawBufferPointer(rebasing: buffer[0..<header + payload.count])
            switch (try? udp.write(datagram)) ?? .wouldBlock {
            case .done(let n):
                upstream.bytesSent += n
                return .sent
            case .wouldBlock:
                return .full
            }
        }
    }

    private func receive() {
        guard let udp else { return }
        while !isClosed {
            let result = upstream.scratch.withUnsafeMutableBytes { try? udp.read(into: $0) }
            guard case .done(let n)? = result else {
                if result == nil { Log.debug("SOCKS5 UDP association: \(SystemError("recv"))", "tunnel") }
                return
            }
            upstream.bytesReceived += n
            upstream.scratch.withUnsafeBytes { buffer in
                let datagram = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                guard let header = try? SocksUDPHeader.decode(datagram: datagram), let source = header.value.address.endpoint else {
                    return upstream.countDrop("udp-socks-malformed", 1)
                }
                guard header.value.fragment == 0 else { return upstream.countDrop("udp-socks-fragment", 1) }
                handler?.association(self, didReceive: UnsafeRawBufferPointer(rebasing: datagram[header.length...]), from: source)
            }
        }
    }

    private func end(notify: Bool) {
        guard !isClosed else { return }
        isClosed = true
        pending = []
        if let udp {
            upstream.loop.forgetBeforeClose(fd: udp.fd)
            udp.close()
        }
        udp = nil
        // With RST: the control connection carries nothing after the handshake, so nothing is lost,
        // and a FIN from this end would leave it in TIME_WAIT here for 60 s — one per UDP flow, all
        // to the same server address. A DNS query from a new port each time is such a flow: past
        // ~470 a second the ephemeral ports to the server ran out, and every connection to it, TCP
        // flows' too, waited for one (`bench.py --modes sluice-socks --tests udp,tcp_cc`: 184 new
        // TCP connections/s after the UDP tests, 5,324/s without them).
        closeSocket(reset: true)
        upstream.associationEnded(self)
        if notify {
            let h = handler
            handler = nil
            h?.associationDidEnd(self)
        }
    }
}

extension SocksDialFailure {
    var isTimeout: Bool { if case .timedOut = self { return true } else { return false } }
}
