import SluiceMux
import SluiceWire

/// One application source endpoint and its association on a carrier. Loop-confined.
final class UDPMapping: MuxStreamHandler {
    /// What became of a datagram handed to `send`.
    enum SendResult {
        case sent
        /// No carrier is up to open the association on.
        case noCarrier
        /// The carrier's budget is used up: datagrams are dropped, never queued (docs/protocol.md §6).
        case carrierFull
    }

    let application: SocketEndpoint
    private unowned let forwarder: UDPForwarder
    private var stream: MuxStream?
    var lastActivity: UInt64 = 0
    /// Resolvers substituted by DNS redirect, and the address the application asked: answers from
    /// the resolver must appear to come from there.
    var answersFrom: [SocketEndpoint: SocketEndpoint] = [:]

    init(application: SocketEndpoint, forwarder: UDPForwarder) {
        self.application = application
        self.forwarder = forwarder
    }

    /// Sends one datagram, opening the association on first use (or after the relay closed it).
    func send(_ payload: UnsafeRawBufferPointer, to destination: SocketEndpoint) -> SendResult {
        let open: MuxStream
        if let stream, !stream.isClosed {
            open = stream
        } else {
            guard let session = forwarder.carrier() else { return .noCarrier }
            open = session.openAssociation(to: Destination(destination), handler: self)
            stream = open
        }
        return open.sendDatagram(payload, endpoint: destination) ? .sent : .carrierFull
    }

    func close() {
        stream?.reset(.closed, message: "UDP mapping closed")
        stream?.handler = nil
        stream = nil
    }

    func stream(_ stream: MuxStream, didReceiveDatagram payload: UnsafeRawBufferPointer, endpoint: SocketEndpoint) {
        forwarder.deliver(payload, from: answersFrom[endpoint] ?? endpoint, to: self)
    }

    func stream(_ stream: MuxStream, datagramTo endpoint: SocketEndpoint, failed code: DatagramErrorCode, mtu: Int) {
        forwarder.deliverError(code, mtu: mtu, about: answersFrom[endpoint] ?? endpoint, from: application)
    }

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {
        // The relay closed it (idle there, or its cap) or the carrier died: the next datagram opens
        // a new association.
        if self.stream === stream { self.stream = nil }
    }
}
