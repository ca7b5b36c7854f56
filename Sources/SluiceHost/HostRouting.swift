import Glibc
import SluiceLog
import SluiceWire

/// A transaction over the host's routing configuration: installs a list of `HostChange`s in order,
/// remembers each step that took effect, and `undo()` reverts exactly those, newest first.
///
/// What it did not do it never reverts: a link that was already up stays up, an MTU that already
/// had the value is left alone, and an address, route or rule that existed already makes the
/// install fail (`EEXIST`) rather than be adopted. If a step fails, everything installed so far is
/// undone and the step's error is thrown. Errors while undoing are logged and the remaining steps
/// are still undone.
///
/// `sluice up` uses `tunnelPlan(...)`: the TUN's MTU and addresses, link up, the `--route` prefixes
/// in table T through the TUN, and per family the rule `not fwmark M lookup T` at priority P, so
/// that marked carrier sockets keep using the main table and never loop into the TUN.
///
/// Policy rules outlive the process; if Sluice is killed before `undo()`, remove them with
/// `NetlinkSocket.deleteRules(lookingUp:family:)` (routes through the TUN vanish with it).
/// Thread rule: use from one thread (control path), like the `NetlinkSocket` it holds.
public final class HostRouting {
    /// The mark Sluice puts on its carrier sockets: 0x534c, "SL".
    public static let defaultFwmark: UInt32 = 0x534c
    /// The routing table for tunnelled prefixes: 21324 (0x534c).
    public static let defaultTable: UInt32 = 21324
    /// The priority of the `not fwmark M lookup T` rules: 21324, before `main` (32766).
    public static let defaultRulePriority: UInt32 = 21324

    /// A step that took effect, with what undoing it needs.
    private enum Step {
        case linkUp(interface: String)
        case mtu(interface: String, previous: Int, new: Int)
        case address(InterfaceAddress)
        case route(Route)
        case rule(PolicyRule)

        var change: HostChange {
            switch self {
            case .linkUp(let interface): return .linkUp(interface: interface)
            case .mtu(let interface, _, let new): return .mtu(new, interface: interface)
            case .address(let address): return .address(address)
            case .route(let route): return .route(route)
            case .rule(let rule): return .rule(rule)
            }
        }
    }

    private let netlink: NetlinkSocket
    private var steps: [Step] = []

    /// The changes that took effect and are not yet undone, in installation order.
    public var installed: [HostChange] { steps.map(\.change) }

    /// Installs `changes` in order. On failure, undoes what this call installed and throws the
    /// failing step's error. Opens its own netlink socket unless given one.
    public init(installing changes: [HostChange], netlink: NetlinkSocket? = nil) throws(HostError) {
        if let netlink { self.netlink = netlink } else { self.netlink = try NetlinkSocket() }
        for change in changes {
            do {
                if let step = try apply(change) {
                    steps.append(step)
                    Log.debug("\(change)", "host")
                }
            } catch {
                Log.warning("rolling back the host changes made so far: \(error)", "host")
                undo()
                throw error
            }
        }
    }

    /// Reverts every installed step, newest first. Steps whose object is already gone (for example
    /// routes that left with their interface) count as undone. Returns the errors it logged.
    @discardableResult
    public func undo() -> [HostError] {
        var failures: [HostError] = []
        while let step = steps.popLast() {
            do {
                try revert(step)
                Log.debug("undid: \(step.change)", "host")
            } catch where Self.meansAlreadyGone(error) {
                Log.debug("already undone: \(step.change) (\(error))", "host")
            } catch {
                Log.warning("could not undo \"\(step.change)\": \(error)", "host")
                failures.append(error)
            }
        }
        return failures
    }

    /// The changes `sluice up` makes: MTU (if given) and link up on `interface`, its `addresses`,
    /// each of `routes` into `table` through it, then for each address family that `routes` use,
    /// the rule `not fwmark <fwmark> lookup <table>` at `rulePriority`.
    public static func tunnelPlan(
        interface: String, mtu: Int? = nil, addresses: [IPPrefix], routes: [IPPrefix],
        table: UInt32 = defaultTable, fwmark: UInt32 = defaultFwmark, rulePriority: UInt32 = defaultRulePriority
    ) -> [HostChange] {
        var plan: [HostChange] = []
        if let mtu { plan.append(.mtu(mtu, interface: interface)) }
        plan.append(.linkUp(interface: interface))
        plan += addresses.map { .address(InterfaceAddress($0, on: interface)) }
        plan += routes.map { .route(Route($0, dev: interface, table: table)) }
        for family in [PolicyRule.Family.ipv4, .ipv6] where routes.contains(where: { $0.address.isIPv4 == (family == .ipv4) }) {
            plan.append(.rule(PolicyRule(family: family, priority: rulePriority, table: table, fwmark: fwmark, invert: true)))
        }
        return plan
    }

    /// The changes that send every DNS query of the host (UDP and TCP to port 53, to any address)
    /// into the TUN, where `--dns` hands it to the configured resolvers: default routes through the
    /// TUN in `dnsTable`, and per family the rules, in order,
    /// `fwmark M lookup main` (carrier sockets never enter the tunnel),
    /// `ipproto udp dport 53 lookup dnsTable` and `ipproto tcp dport 53 lookup dnsTable`,
    /// just ahead of `rulePriority`. Loopback resolvers (127.0.0.53) stay local: the kernel's
    /// local table is looked up before any of these.
    public static func dnsCapturePlan(
        interface: String, dnsTable: UInt32, fwmark: UInt32 = defaultFwmark, rulePriority: UInt32 = defaultRulePriority
    ) -> [HostChange] {
        var plan: [HostChange] = []
        for family in [PolicyRule.Family.ipv4, .ipv6] {
            let any = IPPrefix(family == .ipv4 ? "0.0.0.0/0" : "::/0")!
            plan.append(.route(Route(any, dev: interface, table: dnsTable)))
            plan.append(.rule(PolicyRule(family: family, priority: rulePriority - 3, table: mainTable, fwmark: fwmark)))
            plan.append(.rule(PolicyRule(family: family, priority: rulePriority - 2, table: dnsTable, ipProtocol: 17, destinationPort: 53)))
            plan.append(.rule(PolicyRule(family: family, priority: rulePriority - 1, table: dnsTable, ipProtocol: 6, destinationPort: 53)))
        }
        return plan
    }

    /// The kernel's main routing table (RT_TABLE_MAIN).
    public static let mainTable: UInt32 = 254

    /// Applies one change; `nil` when there was nothing to do (so nothing to undo).
    private func apply(_ change: HostChange) throws(HostError) -> Step? {
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
        case .address(let address):
            try netlink.add(address)
            return .address(address)
        case .route(let route):
            try netlink.add(route)
            return .route(route)
        case .rule(let rule):
            try netlink.add(rule)
            return .rule(rule)
        }
    }

    private func revert(_ step: Step) throws(HostError) {
        switch step {
        case .linkUp(let interface): try netlink.setLink(interface, up: false)
        case .mtu(let interface, let previous, _): try netlink.setMTU(previous, of: interface)
        case .address(let address): try netlink.delete(address)
        case .route(let route): try netlink.delete(route)
        case .rule(let rule): try netlink.delete(rule)
        }
    }

    /// Whether an undo error only says the object is gone already (its interface was deleted,
    /// or the kernel removed it along with something else).
    private static func meansAlreadyGone(_ error: HostError) -> Bool {
        switch error {
        case .noSuchInterface: return true
        case .netlinkRequest(_, let e, _): return e == ESRCH || e == ENOENT || e == EADDRNOTAVAIL || e == ENODEV
        default: return false
        }
    }
}
