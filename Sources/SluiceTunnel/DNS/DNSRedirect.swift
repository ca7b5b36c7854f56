import SluiceWire

/// Where a DNS query that entered the TUN goes: to the tunnel's resolvers (`--dns`), or on to the
/// address it was sent to. A pure decision, so the engine's UDP and TCP paths and the tests ask the
/// same function.
///
/// - Without resolvers (`TunnelConfiguration.dnsResolvers`, `--dns`): every query goes where it was
///   sent (DNS is ordinary traffic).
/// - With resolvers and no domains (`dnsDomains`, `--dns-domain`): every query to port 53 goes to a
///   resolver, picked by the application's source port, and is answered as if from the address asked.
/// - With domains (split DNS): a UDP query for a name within one of the domains goes to a resolver;
///   every other query, and a query the codec cannot read, is left as sent, for the host's own
///   resolver. A query sent to one of the resolvers itself is left as sent too.
///   TCP flows are decided at their SYN, before any query is read: with split DNS they are always
///   left as sent (the limit docs/configuration.md describes: a truncated answer retried over TCP
///   goes to the address the application asked).
struct DNSRedirect {
    enum Decision: Equatable {
        /// Go on to the destination the application used.
        case asSent
        /// Go to this tunnel resolver instead; answers must appear to come from the address asked.
        case resolver(SocketEndpoint)
    }

    static let port: UInt16 = 53

    let resolvers: [SocketEndpoint]
    let domains: [DNSName]

    /// Whether some queries are left to the host's resolver (split DNS).
    var splits: Bool { !resolvers.isEmpty && !domains.isEmpty }

    /// A UDP datagram with `payload` from `application` to `destination`.
    func route(datagram payload: UnsafeRawBufferPointer, to destination: SocketEndpoint, from application: SocketEndpoint) -> Decision {
        guard let resolver = resolver(for: destination, from: application) else { return .asSent }
        guard splits else { return .resolver(resolver) }
        guard let question = try? DNSQuestion(parsingQuery: payload),
              domains.contains(where: { question.name.isWithin($0) })
        else { return .asSent }
        return .resolver(resolver)
    }

    /// A TCP flow from `application` to `destination`, at its SYN.
    func route(flowTo destination: SocketEndpoint, from application: SocketEndpoint) -> Decision {
        guard !splits, let resolver = resolver(for: destination, from: application) else { return .asSent }
        return .resolver(resolver)
    }

    /// The resolver for DNS to `destination`, or nil when it is not DNS, there are no resolvers, or
    /// it already goes to one of them.
    private func resolver(for destination: SocketEndpoint, from application: SocketEndpoint) -> SocketEndpoint? {
        guard destination.port == Self.port, !resolvers.isEmpty else { return nil }
        if splits && resolvers.contains(destination) { return nil }
        return resolvers[Int(application.port) % resolvers.count]
    }
}
