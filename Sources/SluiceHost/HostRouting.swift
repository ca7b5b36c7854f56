import Glibc
import SluiceLog
import SluiceWire

/// A transaction over the host's network configuration: installs a list of `HostChange`s in order
/// (link, addresses, routes and rules through rtnetlink; Sluice's nftables table through
/// libnftables; the resolver file; the TUN link's DNS in systemd-resolved over D-Bus), remembers each step that took effect (`HostStep`), and `undo()`
/// reverts exactly those, newest first.
///
/// What it did not do it never reverts: a link that was already up stays up, an MTU or queue length
/// that already had the value is left alone, and an address, route, rule or nftables table that existed already
/// makes the install fail (`EEXIST`) rather than be adopted. If a step fails, everything installed so far is
/// undone and the step's error is thrown. Errors while undoing are logged and the remaining steps
/// are still undone.
///
/// `sluice up` uses `tunnelPlan(...)`: the TUN's MTU, queue length and addresses, link up, the `--route` prefixes
/// in table T through the TUN, and per family the rule `not fwmark M lookup T` at priority P, so
/// that marked carrier sockets keep using the main table and never loop into the TUN.
///
/// Rules, throw routes, the nftables table and the resolver change outlive the process (routes
/// through the TUN, and resolved's settings of the TUN link, vanish with it). A `journal` hears of every step as it is installed or undone;
/// `sluice up` keeps them in its state file (`HostState`), and after a crash `init(resuming:)` plus
/// `undo()` remove exactly those.
/// Thread rule: use from one thread (control path), like the `NetlinkSocket` it holds.
public final class HostRouting {
    /// The mark Sluice puts on its carrier sockets: 0x534c, "SL".
    public static let defaultFwmark: UInt32 = 0x534c
    /// The routing table for tunnelled prefixes: 21324 (0x534c).
    public static let defaultTable: UInt32 = 21324
    /// The priority of the `not fwmark M lookup T` rules: 21324, before `main` (32766).
    public static let defaultRulePriority: UInt32 = 21324

    private let netlink: NetlinkSocket
    private var nftables: NFTables?
    private var steps: [HostStep] = []
    /// Called with the steps still installed each time they change (after each install and undo
    /// step), so the state file always lists what is on the host. (Called explicitly: property
    /// observers do not run inside an initializer, where installing happens.)
    private let journal: (([HostStep]) -> Void)?

    /// The steps that took effect and are not yet undone, in installation order.
    public var installed: [HostStep] { steps }

    /// Installs `changes` in order. On failure, undoes what this call installed and throws the
    /// failing step's error. Opens its own netlink socket unless given one. `journal` hears of every
    /// change to the installed steps (see `HostState`).
    public init(installing changes: [HostChange], netlink: NetlinkSocket? = nil,
                journal: (([HostStep]) -> Void)? = nil) throws(HostError) {
        if let netlink { self.netlink = netlink } else { self.netlink = try NetlinkSocket() }
        self.journal = journal
        for change in changes {
            do {
                if let step = try apply(change) {
                    steps.append(step)
                    journal?(steps)
                    Log.debug("\(change)", "host")
                }
            } catch {
                Log.warning("rolling back the host changes made so far: \(error)", "host")
                undo()
                throw error
            }
        }
    }

    /// Takes over `steps` that an earlier process installed (read from its state file), so that
    /// `undo()` reverts them: `sluice down`, and `up` cleaning up after a crashed one.
    public init(resuming steps: [HostStep], netlink: NetlinkSocket? = nil, journal: (([HostStep]) -> Void)? = nil) throws(HostError) {
        if let netlink { self.netlink = netlink } else { self.netlink = try NetlinkSocket() }
        self.journal = journal
        self.steps = steps
    }

    /// Reverts every installed step, newest first. Steps whose object is already gone (for example
    /// routes that left with their interface) count as undone. Returns the errors it logged.
    @discardableResult
    public func undo() -> [HostError] {
        var failures: [HostError] = []
        while let step = steps.popLast() {
            defer { journal?(steps) }
            do {
                try revert(step)
                Log.debug("undid: \(step)", "host")
            } catch where Self.meansAlreadyGone(error) {
                Log.debug("already undone: \(step) (\(error))", "host")
            } catch {
                Log.warning("could not undo \"\(step)\": \(error)", "host")
                failures.append(error)
            }
        }
        return failures
    }

    /// What `--route-all` adds to a plan.
    public struct RouteAll: Hashable, Sendable {
        /// The `--dns` resolvers: each gets a `to <resolver> lookup T` rule, so DNS enters the tunnel
        /// even when the resolver lies on a locally attached network.
        public var resolvers: [IPAddress]
        /// Leave out `lookup main suppress_prefixlength 0`, so locally attached networks enter the
        /// tunnel too (`--route-local`).
        public var routeLocal: Bool
        /// Carry IPv6 as well (not with `--no-ipv6`).
        public var ipv6: Bool

        public init(resolvers: [IPAddress], routeLocal: Bool = false, ipv6: Bool = true) {
            self.resolvers = resolvers
            self.routeLocal = routeLocal
            self.ipv6 = ipv6
        }
    }

    /// The main routing table (`RT_TABLE_MAIN`).
    public static let mainTable: UInt32 = 254

    /// The changes `sluice up` makes: MTU (if given) and link up on `interface`, its `addresses`,
    /// each of `routes` into `table` through it (with `routeAll`, the default routes too), a `throw`
    /// route in `table` for each of `excludes`, then for each address family that has routes, the
    /// rule `not fwmark <fwmark> lookup <table>` at `rulePriority` (P).
    ///
    /// With `routeAll`, as `wg-quick` does, also per family: at P-1 `lookup main
    /// suppress_prefixlength 0` (unless `routeLocal`), so the main table's routes more specific than a
    /// default route (locally attached networks) still win; at P-2 `to <resolver> lookup <table>` for
    /// each resolver; at P-3 `fwmark <fwmark> lookup main`, so the marked carriers never meet the
    /// resolver rules (a relay may well be its own resolver).
    public static func tunnelPlan(
        interface: String, mtu: Int? = nil, txQueueLength: Int? = nil, addresses: [IPPrefix], routes: [IPPrefix], excludes: [IPPrefix] = [],
        routeAll: RouteAll? = nil,
        table: UInt32 = defaultTable, fwmark: UInt32 = defaultFwmark, rulePriority: UInt32 = defaultRulePriority
    ) -> [HostChange] {
        var plan: [HostChange] = []
        if let mtu { plan.append(.mtu(mtu, interface: interface)) }
        if let txQueueLength { plan.append(.txQueueLength(txQueueLength, interface: interface)) }
        plan.append(.linkUp(interface: interface))
        plan += addresses.map { .address(InterfaceAddress($0, on: interface)) }

        var tunnelled = routes.map(\.network)
        if let routeAll {
            var defaults = [IPPrefix(address: .v4(0), length: 0)!]
            if routeAll.ipv6 { defaults.append(IPPrefix(address: .v6(0, 0), length: 0)!) }
            tunnelled += defaults.filter { !tunnelled.contains($0) }
        }
        plan += tunnelled.map { .route(Route($0, dev: interface, table: table)) }

        let families = [PolicyRule.Family.ipv4, .ipv6].filter { family in tunnelled.contains { $0.address.isIPv4 == (family == .ipv4) } }
        func inFamily(_ address: IPAddress, _ family: PolicyRule.Family) -> Bool { address.isIPv4 == (family == .ipv4) }
        plan += excludes.filter { prefix in families.contains { inFamily(prefix.address, $0) } }
            .map { .route(Route(throw: $0, table: table)) }

        for family in families {
            if let routeAll, rulePriority >= 3 {
                plan.append(.rule(PolicyRule(family: family, priority: rulePriority - 3, table: mainTable, fwmark: fwmark)))
                for resolver in routeAll.resolvers where inFamily(resolver, family) {
                    let host = IPPrefix(address: resolver, length: resolver.bitWidth)!
                    plan.append(.rule(PolicyRule(family: family, priority: rulePriority - 2, table: table, destination: host)))
                }
                if !routeAll.routeLocal {
                    plan.append(.rule(PolicyRule(family: family, priority: rulePriority - 1, table: mainTable, suppressPrefixLength: 0)))
                }
            }
            plan.append(.rule(PolicyRule(family: family, priority: rulePriority, table: table, fwmark: fwmark, invert: true)))
        }
        return plan
    }

    /// The changes that send the host's DNS queries (UDP and TCP to port 53, to any address) into the
    /// TUN, where `--dns` hands them to the configured resolvers: default routes through the TUN in
    /// `dnsTable`, and per family the rules, in order, `fwmark M lookup main` (carrier sockets never
    /// enter the tunnel; left out with `markRule: false` when `--route-all` has it already),
    /// `ipproto udp dport 53 lookup dnsTable` and (unless `tcp` is false) `ipproto tcp dport 53
    /// lookup dnsTable`, just ahead of `rulePriority`. Loopback resolvers (127.0.0.53) stay local:
    /// the kernel's local table is looked up before any of these.
    ///
    /// Split DNS over the resolver file captures UDP only, at P-2 (before `--route-all`'s
    /// `suppress_prefixlength` rule, so a resolver on the local network is captured too).
    public static func dnsCapturePlan(
        interface: String, dnsTable: UInt32, fwmark: UInt32 = defaultFwmark, rulePriority: UInt32 = defaultRulePriority,
        tcp: Bool = true, markRule: Bool = true
    ) -> [HostChange] {
        var plan: [HostChange] = []
        for family in [PolicyRule.Family.ipv4, .ipv6] {
            let any = IPPrefix(family == .ipv4 ? "0.0.0.0/0" : "::/0")!
            plan.append(.route(Route(any, dev: interface, table: dnsTable)))
            if markRule { plan.append(.rule(PolicyRule(family: family, priority: rulePriority - 3, table: mainTable, fwmark: fwmark))) }
            plan.append(.rule(PolicyRule(family: family, priority: rulePriority - 2, table: dnsTable, ipProtocol: 17, destinationPort: 53)))
            if tcp { plan.append(.rule(PolicyRule(family: family, priority: rulePriority - 1, table: dnsTable, ipProtocol: 6, destinationPort: 53))) }
        }
        return plan
    }

    /// Applies one change; `nil` when there was nothing to do (so nothing to undo).
    private func apply(_ change: HostChange) throws(HostError) -> HostStep? {
        switch change {
        case .linkUp(let interface):
            if try netlink.link(named: interface).isUp { return nil }
            try netlink.setLink(interface, up: true)
            return .linkUp(interface: interface)
        case .mtu(let mtu, let interface):
            let previous = try netlink.link(named: interface).mtu
            if previous == mtu { return nil }
            try netlink.setMTU(mtu, of: interface)
            return .mtu(interface: interface, previous: previous, new: mtu)
        case .txQueueLength(let length, let interface):
            let previous = try netlink.link(named: interface).txQueueLength
            if previous == length { return nil }
            try netlink.setTxQueueLength(length, of: interface)
            return .txQueueLength(interface: interface, previous: previous, new: length)
        case .address(let address):
            try netlink.add(address)
            return .address(address)
        case .route(let route):
            try netlink.add(route)
            return .route(route)
        case .rule(let rule):
            try netlink.add(rule)
            return .rule(rule)
        case .firewall(let ruleset):
            try firewall().run(ruleset.text, operation: "add \(ruleset)")
            return .firewall(table: ruleset.table)
        case .resolver(let change):
            return .resolver(try ResolverFile.install(change))
        case .cgroupTree(let path, let root):
            try CGroupTree.create(path)
            return .cgroupTree(path: path, root: root)
        case .appFirewall(let ruleset):
            try firewall().run(ruleset.text, operation: "add \(ruleset)")
            return .firewall(table: ruleset.table)
        case .resolvedLink(let link):
            return .resolvedLink(interface: link.interface, index: try ResolvedClient.apply(link, netlink: netlink))
        }
    }

    private func revert(_ step: HostStep) throws(HostError) {
        switch step {
        case .linkUp(let interface): try netlink.setLink(interface, up: false)
        case .mtu(let interface, let previous, _): try netlink.setMTU(previous, of: interface)
        case .txQueueLength(let interface, let previous, _): try netlink.setTxQueueLength(previous, of: interface)
        case .address(let address): try netlink.delete(address)
        case .route(let route): try netlink.delete(route)
        case .rule(let rule): try netlink.delete(rule)
        case .firewall(let table):
            let nft = try firewall()
            let parts = table.split(separator: " ").map(String.init)
            guard parts.count == 2, try nft.tableExists(family: parts[0], name: parts[1]) else {
                throw .nftables(operation: "delete table \(table)", message: "no such table")
            }
            try nft.run(FirewallRuleset.deleteText(table: table), operation: "delete nftables table \(table)")
        case .resolver(let backup): try ResolverFile.restore(backup)
        case .resolvedLink(let interface, let index): try ResolvedClient.revert(interface: interface, index: index, netlink: netlink)
        case .cgroupTree(let path, let root):
            try CGroupTree.removeTree(path, movingTo: root)
            // The parent `sluice` directory too, once no other tunnel uses it.
            let parent = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
            if parent.hasPrefix(root + "/") { CGroupTree.removeIfEmpty(parent) }
        }
    }

    /// libnftables, opened on first use: hosts without nftables can still use plain `--route`.
    private func firewall() throws(HostError) -> NFTables {
        if let nftables { return nftables }
        let made = try NFTables()
        nftables = made
        return made
    }

    /// Whether an undo error only says the object is gone already (its interface was deleted,
    /// or the kernel removed it along with something else).
    private static func meansAlreadyGone(_ error: HostError) -> Bool {
        switch error {
        case .noSuchInterface: return true
        case .netlinkRequest(_, let e, _): return e == ESRCH || e == ENOENT || e == EADDRNOTAVAIL || e == ENODEV
        case .nftables(_, let message): return message == "no such table"
        case .dbus(_, let name, _): return name == ResolvedLink.noSuchLinkError
        default: return false
        }
    }
}
