import Glibc
import SluiceLog
import SluiceSystem
import SluiceWire

/// What `sluice up` changes on the host around its TUN, as one transaction with a crash record:
/// routes and policy rules (`--route`, `--route-all`, `--exclude`), the nftables table (`--kill-switch`,
/// `--no-ipv6`) and DNS (`--dns`: systemd-resolved or the resolver file), listed step by step in the state file
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

    /// The TUN's transmit queue, in packets: what the kernel holds for Sluice to read before it drops
    /// (a TUN's default is 500). lwIP finds a segment's connection by walking a list, so with
    /// thousands of connections open it takes packets more slowly than applications can send a
    /// burst of them; 10,000 applications closing at once (test_floods.py's 10,000 flows) overflowed
    /// 500 packets, their kernels resent in step at the same timeouts, and the last flows took over
    /// two minutes to end. The queue only fills while Sluice is behind, and each application's
    /// kernel (TCP small queues) bounds what one socket keeps in it.
    public static let tunQueueLength = 10_000

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

    /// Installs everything for the TUN `interface`: `settings` with the tunnel's `relays` (kept
    /// reachable outside the tunnel), its DNS `resolvers` and `mtu`. On failure nothing stays
    /// installed (the record stays, empty, until `teardown`).
    public func install(_ settings: HostConfiguration, relays: [SocketEndpoint], resolvers: [IPAddress], mtu: Int,
                        interface: String) throws(HostError) {
        if settings.routeAll {
            let netlink = try NetlinkSocket()
            for relay in relays {
                let path = try Self.relayPath(relay.address, fwmark: settings.fwmark, tun: interface, netlink: netlink)
                Log.debug("carriers reach the relay \(relay.address) \(path.pathDescription)", "host")
            }
        }
        let backend = try Self.dnsBackend(settings, resolvers: resolvers)
        let dns = Self.dnsPlan(settings: settings, resolvers: resolvers, interface: interface, backend: backend)
        if backend != .none {
            Log.info("DNS follows --dns through \(backend)"
                     + (settings.dnsDomains.isEmpty ? "" : " for \(settings.dnsDomains.map(\.description).joined(separator: ", "))"), "host")
        }
        var plan: [HostChange] = []
        // The firewall first, so the kill switch holds before any route points anywhere.
        if settings.killSwitch || settings.blockIPv6 {
            plan.append(.firewall(FirewallRuleset(tun: interface, relays: relays, fwmark: settings.fwmark,
                                                  killSwitch: settings.killSwitch, blockIPv6: settings.blockIPv6,
                                                  relayUDP: settings.upstreamTakesUDP)))
        }
        plan += HostRouting.tunnelPlan(
            interface: interface, mtu: mtu, txQueueLength: Self.tunQueueLength, addresses: settings.addresses, routes: settings.routes,
            excludes: settings.excludes,
            routeAll: settings.routeAll ? HostRouting.RouteAll(resolvers: resolvers, routeLocal: settings.routeLocal, ipv6: !settings.blockIPv6) : nil,
            table: settings.table, fwmark: settings.fwmark)
        // --dns: DNS to any address, not only inside the routed prefixes, enters the tunnel (HostSetup+DNS.swift).
        plan += dns.capture
        plan += try appPlan(settings: settings, interface: interface)
        // The resolver last: by then its queries have a way into the tunnel.
        plan += dns.resolver
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

    /// How the marked carriers reach `relay` now (`ip route get <relay> mark M`), which `--route-all`
    /// needs outside the tunnel before anything is installed, and the network watch asks again after
    /// every change. Throws `.relayUnreachable` when there is no such route or it leads into `tun`.
    public static func relayPath(_ relay: IPAddress, fwmark: UInt32, tun: String, netlink: NetlinkSocket) throws(HostError) -> RouteLookup {
        let answer: RouteLookup
        do throws(HostError) {
            answer = try netlink.lookupRoute(to: relay, mark: fwmark)
        } catch {
            throw .relayUnreachable(relay: "\(relay)", detail: error.errno.map { "ip route get \(relay) mark 0x\(String(fwmark, radix: 16)): \(SystemError.message($0))" } ?? "\(error)")
        }
        if answer.interface == tun {
            throw .relayUnreachable(relay: "\(relay)", detail: "its route leads into \(tun) itself")
        }
        return answer
    }
}
