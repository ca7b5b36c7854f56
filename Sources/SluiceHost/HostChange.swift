/// One change to the host's network configuration that `HostRouting` installs and can undo.
public enum HostChange: Hashable, Sendable, CustomStringConvertible {
    /// Set the interface administratively up. Undone by setting it down, but only if it was down.
    case linkUp(interface: String)
    /// Set the interface's MTU. Undone by restoring the MTU it had before.
    case mtu(Int, interface: String)
    /// Set the interface's transmit queue length. Undone by restoring the length it had before.
    case txQueueLength(Int, interface: String)
    /// Add an address. Undone by deleting it.
    case address(InterfaceAddress)
    /// Add a route. Undone by deleting it.
    case route(Route)
    /// Add a policy rule. Undone by deleting it.
    case rule(PolicyRule)
    /// Create Sluice's nftables table with these rules. Undone by deleting the table.
    case firewall(FirewallRuleset)
    /// Point the resolver configuration at Sluice's resolvers. Undone by restoring the original.
    case resolver(ResolverChange)
    /// Create the cgroup directory (and parents) that holds per-application groups. Undone by
    /// moving any process left in it to the cgroup2 `root` and removing it with its subgroups.
    case cgroupTree(path: String, root: String)
    /// Create the per-application nftables table. Undone by deleting the table.
    case appFirewall(AppRuleset)
    /// Give the TUN link DNS servers and routing domains in systemd-resolved, over D-Bus. Undone
    /// with `RevertLink`.
    case resolvedLink(ResolvedLink)

    public var description: String {
        switch self {
        case .linkUp(let interface): return "set link \(interface) up"
        case .mtu(let mtu, let interface): return "set mtu \(mtu) on \(interface)"
        case .txQueueLength(let length, let interface): return "set txqueuelen \(length) on \(interface)"
        case .address(let address): return "add address \(address)"
        case .route(let route): return "add route \(route)"
        case .rule(let rule): return "add \(rule)"
        case .firewall(let ruleset): return "add \(ruleset)"
        case .resolver(let change): return change.description
        case .cgroupTree(let path, _): return "create cgroup \(path)"
        case .appFirewall(let ruleset): return "add \(ruleset)"
        case .resolvedLink(let link): return link.description
        }
    }
}
