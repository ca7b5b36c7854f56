import SluiceIO
import SluiceSystem
import SluiceWire

/// How a carrier reaches the relay: makes the TCP socket and starts connecting it. The seam where
/// a host puts its own rules on carrier sockets — `sluice up` marks them (SO_MARK) so they never
/// route into its own TUN (SluiceUp's `MarkedCarrierTransport`).
public protocol CarrierTransport: Sendable {
    /// A non-blocking TCP socket to `relay` with the connect started; completion is signalled by
    /// writability on the engine's loop.
    func connect(to relay: SocketEndpoint) throws(SystemError) -> Socket
}

/// A plain TCP connection with Nagle off (carriers carry small frames that must not wait): what
/// `sluice bench` and tests use, and the default.
public struct DirectCarrierTransport: CarrierTransport {
    public init() {}

    public func connect(to relay: SocketEndpoint) throws(SystemError) -> Socket {
        let socket = try Socket.tcp(for: relay.address)
        do throws(SystemError) {
            socket.setNoDelay()
            try socket.connect(to: relay)
        } catch {
            socket.close()
            throw error
        }
        return socket
    }
}
