import Glibc
import SluiceWire

/// What systemd-resolved is told about the TUN link (its D-Bus API, org.freedesktop.resolve1(5)):
/// the `--dns` servers, the routing domains, and whether the link is the default route for names
/// that no link's domains claim.
///
/// - Without `--dns-domain`: routing domain `~.` and default route, so every name goes to the TUN's
///   servers, whatever path asks (glibc through the stub, nss-resolve, resolvectl): `~.` is a match
///   for every name, and resolved prefers links whose domains match over links that are only a
///   default route.
/// - With `--dns-domain`: those domains as routing-only domains (`~corp.example`), and not the
///   default route, so only their names come to the TUN; everything else keeps the host's servers.
///
/// DNSSEC and DNS-over-TLS are not set: the link follows the user's global settings
/// (resolved.conf). `RevertLink` undoes all of it (HostStep.resolvedLink).
public struct ResolvedLink: Hashable, Sendable, CustomStringConvertible {
    public static let service = "org.freedesktop.resolve1"
    public static let objectPath = "/org/freedesktop/resolve1"
    public static let managerInterface = "org.freedesktop.resolve1.Manager"
    /// The D-Bus error resolved answers when it does not know the interface index (yet).
    public static let noSuchLinkError = "org.freedesktop.resolve1.NoSuchLink"

    public var interface: String
    public var servers: [IPAddress]
    /// Routing domains; empty: every name (`~.`).
    public var domains: [DNSName]

    public init(interface: String, servers: [IPAddress], domains: [DNSName] = []) {
        self.interface = interface
        self.servers = servers
        self.domains = domains
    }

    /// The method calls that configure the link with index `index`, in order: `SetLinkDNS`,
    /// `SetLinkDomains`, `SetLinkDefaultRoute`.
    public func calls(index: Int32) -> [DBusCall] {
        let servers = DBusValue.array(element: "(iay)", servers.map {
            .structure([.int32($0.isIPv4 ? AF_INET : AF_INET6), .bytes($0.bytes)])
        })
        let routing = domains.isEmpty ? [DNSName(".")!] : domains
        let domainList = DBusValue.array(element: "(sb)", routing.map { .structure([.string($0.description), .boolean(true)]) })
        return [
            Self.call("SetLinkDNS", [.int32(index), servers]),
            Self.call("SetLinkDomains", [.int32(index), domainList]),
            Self.call("SetLinkDefaultRoute", [.int32(index), .boolean(domains.isEmpty)]),
        ]
    }

    /// `RevertLink`: the link forgets everything set over D-Bus.
    public static func revertCall(index: Int32) -> DBusCall {
        call("RevertLink", [.int32(index)])
    }

    private static func call(_ member: String, _ arguments: [DBusValue]) -> DBusCall {
        DBusCall(destination: service, path: objectPath, interface: managerInterface, member: member, arguments: arguments)
    }

    public var description: String {
        let domainText = domains.isEmpty ? "~." : domains.map { "~\($0)" }.joined(separator: " ")
        return "point systemd-resolved's link \(interface) at \(servers.map(\.description).joined(separator: ", ")) for \(domainText)"
            + (domains.isEmpty ? " (default route)" : "")
    }
}
