import SluiceWire

/// What `sluice up` changes on the host around its TUN: the device, its addresses and routes, the
/// policy rules, firewall, resolver and per-application groups. The tunnel engine's own settings
/// (relay, keys, carriers) are SluiceTunnel's `TunnelConfiguration`; `HostSetup.install` takes the
/// few values both need (the relay, the resolvers, the MTU) as arguments.
public struct HostConfiguration: Sendable, Equatable {
    /// Name of the TUN device (`--tun`).
    public var tun: String
    /// Addresses of the TUN with their prefix lengths (`--address`).
    public var addresses: [IPPrefix]
    /// Prefixes routed into the tunnel (`--route`).
    public var routes: [IPPrefix]
    /// SO_MARK of the carrier sockets, matched by the policy rules so they bypass the tunnel (`--fwmark`).
    public var fwmark: UInt32
    /// Routing table of the tunnel's routes (`--table`); the next two numbers serve DNS capture and
    /// per-application routing.
    public var table: UInt32
    /// Send all traffic through the tunnel and point the host's resolver at the DNS resolvers (`--route-all`).
    public var routeAll = false
    /// Prefixes kept off the tunnel (`--exclude`).
    public var excludes: [IPPrefix] = []
    /// With `routeAll`, locally attached networks enter the tunnel too (`--route-local`).
    public var routeLocal = false
    /// Nothing leaves except through the TUN, to the relay, or on loopback (`--kill-switch`).
    public var killSwitch = false
    /// Tunnel IPv6 off; IPv6 blocked while up (`--no-ipv6`).
    public var blockIPv6 = false
    /// Existing cgroups (relative to the cgroup2 root) routed like `sluice exec` (`--app-cgroup`).
    public var appCGroups: [String] = []
    /// The upstream takes UDP at its address from the marked sockets (a SOCKS5 server's UDP relay):
    /// the kill switch lets that through as well as TCP to its port.
    public var upstreamTakesUDP = false
    /// Open the TUN with IFF_VNET_HDR and TSO/checksum offloads (super-packets both ways).
    public var tunOffload = true
    /// Split DNS: only names in these domains follow the DNS resolvers (`--dns-domain`); empty: all.
    public var dnsDomains: [DNSName] = []
    /// How the host's DNS follows the resolvers (`--resolver`).
    public var resolver: Resolver = .auto

    /// How the host's DNS follows the tunnel's resolvers (`--resolver`; SluiceConfig's `ResolverMode`).
    public enum Resolver: String, Sendable, Equatable {
        /// systemd-resolved when it runs, the resolver file otherwise.
        case auto
        /// systemd-resolved over D-Bus; refused when it does not run.
        case resolved
        /// `/etc/resolv.conf` and the TUN's DNS capture, never systemd-resolved.
        case file
    }

    public init(tun: String, addresses: [IPPrefix], routes: [IPPrefix], fwmark: UInt32, table: UInt32) {
        self.tun = tun
        self.addresses = addresses
        self.routes = routes
        self.fwmark = fwmark
        self.table = table
    }
}
