import Glibc
import SluiceLog
import SluiceSystem
import SluiceWire

/// What `sluice up` changes on the host around its TUN, as one transaction with a crash record:
/// routes and policy rules (`--route`, `--route-all`, `--exclude`), the nftables table (`--kill-switch`,
/// `--no-ipv6`) and the resolver file (`--route-all`), listed step by step in the state file
/// (`HostState`, `/run/sluice/<tun>.json`).
///
/// Two phases, because the leftovers of a crashed `up` must go before the new TUN exists (they name
/// the same interface): `init` cleans up after a dead owner and claims the state file; `install`
/// installs. `teardown` undoes everything and removes the record. Control path only.
public final class HostSetup {
    public let statePath: String
    private var state: HostState
    private var routing: HostRouting?
    /// The cgroup2 mount when per-application routing is installed (`HostSetup+Apps.swift`).
    public internal(set) var appMount: CGroupMount?

    /// Undoes what a crashed `up` of this tunnel left (per its record), then records this process as
    /// the owner. Throws, changing nothing, if a live `up` owns the tunnel or the record belongs to
    /// another namespace.
    public init(tun: String) throws(HostError) {
        statePath = HostState.path(for: tun)
        if try HostState.load(path: statePath) != nil {
            Log.info("cleaning up after a sluice up of \(tun) that did not stop normally (\(statePath))", "host")
            for failure in try HostState.undoLeftovers(at: statePath) { Log.warning("cleanup: \(failure)", "host") }
        }
        state = HostState.forThisProcess(tun: tun)
        try state.save(to: statePath)
    }

    /// Installs everything for the TUN `interface`: `settings` with the tunnel's `relay` (kept
    /// reachable outside the tunnel), its DNS `resolvers` and `mtu`. On failure nothing stays
    /// installed (the record stays, empty, until `teardown`).
    public func install(_ settings: HostConfiguration, relay: SocketEndpoint, resolvers: [IPAddress], mtu: Int,
                        interface: String) throws(HostError) {
        if settings.routeAll { try checkRelayRoute(relay, fwmark: settings.fwmark, interface: interface) }
        var plan: [HostChange] = []
        // The firewall first, so the kill switch holds before any route points anywhere.
        if settings.killSwitch || settings.blockIPv6 {
            plan.append(.firewall(FirewallRuleset(tun: interface, relay: relay, fwmark: settings.fwmark,
                                                  killSwitch: settings.killSwitch, blockIPv6: settings.blockIPv6,
                                                  relayUDP: settings.upstreamTakesUDP)))
        }
        plan += HostRouting.tunnelPlan(
            interface: interface, mtu: mtu, addresses: settings.addresses, routes: settings.routes,
            excludes: settings.excludes,
            routeAll: settings.routeAll ? HostRouting.RouteAll(resolvers: resolvers, routeLocal: settings.routeLocal, ipv6: !settings.blockIPv6) : nil,
            table: settings.table, fwmark: settings.fwmark)
        if !settings.routeAll && !resolvers.isEmpty {
            // --dns without --route-all: DNS to any address, not only inside the routed prefixes,
            // must still enter the tunnel (with --route-all everything does anyway).
            plan += HostRouting.dnsCapturePlan(interface: interface, dnsTable: settings.table + 1, fwmark: settings.fwmark)
        }
        plan += try appPlan(settings: settings, interface: interface)
        // The resolver last: by then its queries have a way into the tunnel.
        if settings.routeAll {
            plan.append(.resolver(ResolverChange(backupPath: HostState.resolverBackupPath(for: settings.tun), nameservers: resolvers,
                                                 owner: "tunnel \(interface), pid \(getpid())")))
        }
        let path = statePath
        routing = try HostRouting(installing: plan) { [weak self] steps in
            guard let self else { return }
            self.state.steps = steps
            do throws(HostError) { try self.state.save(to: path) } catch { Log.warning("\(error)", "host") }
        }
    }

    /// Undoes every installed step, newest first, and removes the record.
    public func teardown() {
        for failure in routing?.undo() ?? [] { Log.warning("cleanup: \(failure)", "client") }
        routing = nil
        HostState.remove(path: statePath)
    }

    /// `--route-all` sends everything into the tunnel except the marked carriers, which must still
    /// find the relay through the host's own routes: ask the kernel as the carriers would.
    private func checkRelayRoute(_ endpoint: SocketEndpoint, fwmark: UInt32, interface: String) throws(HostError) {
        let relay = endpoint.address
        let answer: RouteLookup
        do throws(HostError) {
            answer = try NetlinkSocket().lookupRoute(to: relay, mark: fwmark)
        } catch {
            throw .relayUnreachable(relay: "\(relay)", detail: error.errno.map { "ip route get \(relay) mark 0x\(String(fwmark, radix: 16)): \(SystemError.message($0))" } ?? "\(error)")
        }
        if answer.interface == interface {
            throw .relayUnreachable(relay: "\(relay)", detail: "its route leads into \(interface) itself")
        }
        Log.debug("carriers reach the relay \(relay) via \(answer.interface ?? "?")" + (answer.gateway.map { " gateway \($0)" } ?? ""), "host")
    }
}
