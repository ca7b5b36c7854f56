import Glibc
import SluiceLog
import SluiceWire

/// The DNS part of `sluice up`'s host changes: how the host's resolvers are pointed at `--dns`.
///
/// | backend | no `--dns-domain` | `--dns-domain` (split DNS) |
/// |---|---|---|
/// | systemd-resolved | the TUN link gets the servers, `~.` and the default route | the TUN link gets the servers and `~domain` routing domains |
/// | resolver file, `--route-all` | `/etc/resolv.conf` names `--dns` | resolv.conf untouched; UDP to port 53 is captured into the TUN and split there |
/// | resolver file, `--route` only | all port 53 (UDP, TCP) is captured into the TUN | UDP to port 53 is captured and split |
///
/// With systemd-resolved, resolv.conf is never touched, and without `--route-all` or domains port 53
/// is still captured as with the file, so programs that ignore resolved follow `--dns` too. Split
/// DNS captures only UDP: a TCP query's name is not known at its SYN (see `DNSRedirect`).
extension HostSetup {
    /// Which way the host's DNS follows `--dns`.
    enum DNSBackend: Equatable, CustomStringConvertible {
        case none
        case resolved
        case file

        var description: String {
            switch self {
            case .none: return "none"
            case .resolved: return "systemd-resolved"
            case .file: return "the resolver file"
            }
        }
    }

    /// The backend for `settings` with the tunnel's DNS `resolvers`: none without resolvers; for
    /// `--resolver auto`, systemd-resolved when it runs (`ResolvedClient.probe`, which loads
    /// libsystemd only when resolved's runtime directory exists). `--resolver resolved` without a
    /// running resolved is an error.
    static func dnsBackend(_ settings: HostConfiguration, resolvers: [IPAddress]) throws(HostError) -> DNSBackend {
        guard !resolvers.isEmpty else { return .none }
        switch settings.resolver {
        case .file:
            return .file
        case .resolved:
            if case .failure(let why) = ResolvedClient.probe() { throw .resolvedNotRunning(detail: why.description) }
            return .resolved
        case .auto:
            switch ResolvedClient.probe() {
            case .success:
                return .resolved
            case .failure(let why):
                Log.debug("DNS through the resolver file: systemd-resolved is not used (\(why))", "host")
                return .file
            }
        }
    }

    /// The changes that capture DNS into the TUN (placed with the routes) and the resolver change
    /// (placed last, when its queries have a way into the tunnel).
    static func dnsPlan(settings: HostConfiguration, resolvers: [IPAddress], interface: String, backend: DNSBackend)
        -> (capture: [HostChange], resolver: [HostChange])
    {
        let split = !settings.dnsDomains.isEmpty
        let dnsTable = settings.table + 1
        func capture(tcp: Bool) -> [HostChange] {
            HostRouting.dnsCapturePlan(interface: interface, dnsTable: dnsTable, fwmark: settings.fwmark, tcp: tcp, markRule: !settings.routeAll)
        }
        switch backend {
        case .none:
            return ([], [])
        case .resolved:
            let link = ResolvedLink(interface: interface, servers: resolvers, domains: settings.dnsDomains)
            return (!settings.routeAll && !split ? capture(tcp: true) : [], [.resolvedLink(link)])
        case .file where split:
            warnIfLoopbackResolver()
            return (capture(tcp: false), [])
        case .file:
            guard settings.routeAll else { return (capture(tcp: true), []) }
            let change = ResolverChange(backupPath: HostState.resolverBackupPath(for: settings.tun), nameservers: resolvers,
                                        owner: "tunnel \(interface), pid \(getpid())")
            return ([], [.resolver(change)])
        }
    }

    /// Split DNS over the resolver file sees only queries that leave the host: a loopback resolver
    /// (systemd-resolved's stub 127.0.0.53, dnsmasq on 127.0.0.1) answers inside the host, and its
    /// own upstream queries are split only when they go to port 53.
    private static func warnIfLoopbackResolver() {
        guard let loopback = ResolverChange.nameservers().first(where: \.isLoopback) else { return }
        Log.warning("--dns-domain: \(ResolverChange.defaultPath) names the loopback resolver \(loopback), whose queries never enter the tunnel; "
                    + "names in the domains reach --dns only if it forwards them to port 53 elsewhere (with systemd-resolved, use --resolver resolved)", "host")
    }
}
