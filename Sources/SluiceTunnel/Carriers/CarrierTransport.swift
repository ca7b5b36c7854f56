import SluiceIO
import SluiceSystem
import SluiceWire

/// How the engine's own sockets reach the upstream: makes a carrier's TCP socket and starts
/// connecting it, and (for a SOCKS5 upstream) the TCP and UDP sockets to the SOCKS server. The
/// seam where a host puts its own rules on those sockets — `sluice up` marks them (SO_MARK) so they
/// never route into its own TUN (SluiceUp's `MarkedCarrierTransport`).
public protocol CarrierTransport: Sendable {
    /// A non-blocking TCP socket to `relay` with the connect started; completion is signalled by
    /// writability on the engine's loop.
    func connect(to relay: SocketEndpoint) throws(SystemError) -> Socket
    /// A non-blocking UDP socket for `address`'s family, unbound (a SOCKS5 UDP association's).
    /// Defaults to a plain socket.
    func udpSocket(for address: IPAddress) throws(SystemError) -> Socket
}

extension CarrierTransport {
    public func udpSocket(for address: IPAddress) throws(SystemError) -> Socket {
        try Socket.udp(for: address)
    }

    /// Turns Nagle off on `socket` (carriers carry small frames that must not wait) and starts
    /// connecting it to `relay`; closes it when that fails. What every `connect(to:)` ends with.
    public func startConnecting(_ socket: Socket, to relay: SocketEndpoint) throws(SystemError) -> Socket {
        try socket.closingOnFailure { () throws(SystemError) in
            socket.setNoDelay()
            try socket.connect(to: relay)
        }
        return socket
    }
}

/// A plain TCP connection with Nagle off (carriers carry small frames that must not wait): what
/// `sluice bench` and tests use, and the default.
public struct DirectCarrierTransport: CarrierTransport {
    public init() {}

    public func connect(to relay: SocketEndpoint) throws(SystemError) -> Socket {
        try startConnecting(Socket.tcp(for: relay.address), to: relay)
    }
}
