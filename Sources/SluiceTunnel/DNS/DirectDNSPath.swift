import SluiceLoop
import SluiceWire

/// A way around the tunnel for the DNS queries that split DNS (`DNSRedirect`) leaves to the host's
/// own resolver, supplied by the host (`sluice up`: SluiceUp's `MarkedDNSPath`) and given to the
/// engine before `start()` (`TunnelEngine.directDNS`). The engine opens no sockets other than its
/// carriers, and only the host knows its routes.
///
/// Why the engine needs one: with split DNS over the host's resolver file, the host's queries to
/// port 53 are steered into the packet flow so that names in the domains can be picked out. The
/// others must reach the resolver the host asked, which often sits on the local network (a home
/// router), where the relay cannot reach it: those go out here. Queries to a resolver the host routes
/// into the tunnel anyway still go through the relay, exactly as without split DNS. Without a direct
/// path, every query goes through the relay. Called on the engine's loop thread.
public protocol DirectDNSPath: AnyObject {
    /// Starts on the engine's loop; answers go to `answer` (payload, the resolver that sent it, the
    /// application endpoint that asked), which writes them toward the application.
    func start(on loop: EventLoop, answer: @escaping (UnsafeRawBufferPointer, _ source: SocketEndpoint, _ application: SocketEndpoint) -> Void)
    /// Whether the host's routes take packets to `address` around the tunnel, so a query to it must
    /// take this path rather than the relay.
    func bypassesTunnel(_ address: IPAddress) -> Bool
    /// Sends one query from `application` to `destination` around the tunnel; false when it could
    /// not be sent (counted as a drop).
    func send(_ payload: UnsafeRawBufferPointer, from application: SocketEndpoint, to destination: SocketEndpoint) -> Bool
    /// Closes every socket (the engine stops).
    func stop()
}
