import SluiceLoop
import SluiceMux
import SluiceWire

/// One application source endpoint and its association through the upstream. Loop-confined.
final class UDPMapping: UpstreamAssociationHandler, IdleListMember {
    /// What became of a datagram handed to `send`.
    enum SendResult {
        case sent
        /// Nothing is up to open the association on.
        case noCarrier
        /// The way up is full: datagrams are dropped, never queued (docs/protocol.md §6).
        case carrierFull
        /// The upstream cannot carry UDP (a SOCKS5 server without UDP ASSOCIATE).
        case unsupported
    }

    let application: SocketEndpoint
    private unowned let forwarder: UDPForwarder
    private var association: UpstreamAssociation?
    var lastActivity: UInt64 = 0
    var idleListEntry: IdleListEntry?
    /// Resolvers substituted by DNS redirect, and the address the application asked: answers from
    /// the resolver must appear to come from there.
    var answersFrom: [SocketEndpoint: SocketEndpoint] = [:]

    init(application: SocketEndpoint, forwarder: UDPForwarder) {
        self.application = application
        self.forwarder = forwarder
    }

    /// Sends one datagram, opening the association on first use (or after the far end closed it).
    func send(_ payload: UnsafeRawBufferPointer, to destination: SocketEndpoint) -> SendResult {
        let open: UpstreamAssociation
        if let association, !association.isClosed {
            open = association
        } else {
            do {
                open = try forwarder.upstream.openAssociation(to: Destination(destination), handler: self)
            } catch .udpUnsupported {
                return .unsupported
            } catch {
                return .noCarrier
            }
            association = open
        }
        return open.send(payload, to: destination) == .sent ? .sent : .carrierFull
    }

    func close() {
        association?.close()
        association = nil
    }

    func association(_ association: UpstreamAssociation, didReceive payload: UnsafeRawBufferPointer, from source: SocketEndpoint) {
        forwarder.deliver(payload, from: answersFrom[source] ?? source, to: self)
    }

    func association(_ association: UpstreamAssociation, datagramTo endpoint: SocketEndpoint, failed code: DatagramErrorCode, mtu: Int) {
        forwarder.deliverError(code, mtu: mtu, about: answersFrom[endpoint] ?? endpoint, from: application)
    }

    func associationDidEnd(_ association: UpstreamAssociation) {
        // The far end closed it (idle there, its cap) or its connection died: the next datagram
        // opens a new association.
        if self.association === association { self.association = nil }
    }
}
