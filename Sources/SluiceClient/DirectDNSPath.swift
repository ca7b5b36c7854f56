import SluiceWire

/// A way around the tunnel for the DNS queries that split DNS (`DNSRedirect`) leaves to the host's
/// own resolver, supplied by the host layer (`MarkedDNSPath`): the engine opens no sockets other than
/// its carriers, and only the host knows its routes.
///
/// Why the engine needs one: with split DNS and the resolver file, the host's queries to port 53 are
/// steered into the TUN so that names in the `--dns-domain`s can be picked out. The others must reach
/// the resolver the host asked, which often sits on the local network (a home router), where the relay
/// cannot reach it. Those go out here; queries to a resolver the host routes into the tunnel anyway
/// still go through the relay, exactly as without split DNS. Stack thread only.
protocol DirectDNSPath: AnyObject {
    /// Whether the host's routes take packets to `address` around the tunnel (as they would without
    /// Sluice's DNS capture), so a query to it must take this path rather than the relay.
    func bypassesTunnel(_ address: IPAddress) -> Bool
    /// Sends one query from `application` to `destination` around the tunnel; false when it could
    /// not be sent (counted as dropped). Answers come back through the handler the host gave.
    func send(_ payload: UnsafeRawBufferPointer, from application: SocketEndpoint, to destination: SocketEndpoint) -> Bool
    /// The network changed: what `bypassesTunnel` learnt may be stale.
    func routesChanged()
    /// Closes every socket (shutdown).
    func close()
}
