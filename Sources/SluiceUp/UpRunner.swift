import CSluiceHostShims
import Glibc
import SluiceControl
import SluiceHost
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceTunnel

/// `sluice up` on a Linux host: the tunnel engine (SluiceTunnel) driven by a TUN device, with the
/// host set up around it (addresses, routes, rules, firewall, resolver, per-application groups,
/// `HostSetup`), a control socket (`sluice status`, `sluice exec`, `sluice cgroup`) and signals.
/// Everything runs on one event loop on the calling thread.
public final class UpRunner: TunnelEventDelegate {
    let tunnel: TunnelConfiguration
    let host: HostConfiguration
    let loop: EventLoop
    var setup: HostSetup?
    private let flow: TunPacketFlow
    let engine: TunnelEngine
    var control: ControlServer?
    /// Per-application routing (`sluice exec`, `sluice cgroup`): the groups, when installed.
    var apps: AppGroups?
    /// Split DNS's way around the tunnel, also given to the engine (UpRunner+Network.swift).
    var directDNS: MarkedDNSPath?
    /// Watches the path to the relay (UpRunner+Network.swift).
    var network: NetworkWatch?
    /// SIGINT, SIGTERM and SIGHUP, blocked from the start of `init`: a signal that arrives while the
    /// host is being set up (`sluice down` right after `up` made its TUN) waits here and shuts down
    /// cleanly once `run` reads it, instead of killing the process half-way through setup.
    private let signalFD: Int32

    /// Cleans up after a crashed `up` of the same tunnel, opens the TUN, installs addresses, routes,
    /// rules, firewall and resolver, and sets the engine up. On failure nothing stays installed.
    public init(tunnel: TunnelConfiguration, host: HostConfiguration) throws {
        self.tunnel = tunnel
        self.host = host
        signalFD = sluice_signalfd_for_shutdown()
        loop = try EventLoop()
        let setup = try HostSetup(tun: host.tun)
        do {
            flow = try TunPacketFlow(name: host.tun, mtu: tunnel.mtu, offloads: host.tunOffload)
        } catch {
            setup.teardown()
            throw error
        }
        do {
            try setup.install(host, relays: tunnel.upstreamEndpoints, resolvers: tunnel.dnsResolvers.map(\.address), mtu: tunnel.mtu, interface: flow.tun.name)
            engine = try TunnelEngine(configuration: tunnel, packetFlow: flow, transport: MarkedCarrierTransport(fwmark: host.fwmark), loop: loop)
        } catch {
            setup.teardown()
            throw error
        }
        self.setup = setup
        setUpNetworkPaths()
    }

    /// Runs until SIGINT, SIGTERM or SIGHUP, then removes everything it installed.
    public func run() throws {
        if signalFD >= 0 {
            try loop.register(fd: signalFD, events: [.readable]) { [unowned self] _ in
                let signo = sluice_signalfd_read_signo(self.signalFD)
                Log.info("signal \(signo) received; shutting down", "client")
                self.loop.stop()
            }
        }
        engine.delegate = self
        try engine.start()
        startNetworkWatch()
        startControl()
        var routed = host.routes.map(\.description)
        if host.routeAll { routed.insert("all (--route-all)", at: 0) }
        let guards = (host.killSwitch ? "; kill switch on" : "") + (host.blockIPv6 ? "; IPv6 blocked" : "")
        Log.info("tunnel \(flow.tun.name) up: \(host.addresses.map(\.description).joined(separator: ", ")); routes \(routed.joined(separator: ", ")); upstream \(engine.upstream.name)\(guards)", "client")
        loop.run()
        shutdown()
    }

    public func tunnel(_ engine: TunnelEngine, didEmit event: TunnelEvent) {
        switch event {
        case .disconnected(let error?) where error.isFatal:
            Log.error("tunnel stopped: \(error)", "client")
            loop.stop()
        case .reconnecting(let reason) where reason != Self.networkChanged:
            // A network change has its own line already (NetworkWatch).
            Log.info("all carriers lost (\(reason)); reconnecting", "client")
        default:
            break
        }
    }

    private func shutdown() {
        stopNetworkWatch()
        engine.stop()
        if signalFD >= 0 {
            loop.deregister(fd: signalFD)
            close(signalFD)
        }
        control?.shutdown()
        control = nil
        setup?.teardown()
        setup = nil
        Log.info("tunnel \(flow.tun.name) down; everything it installed is removed", "client")
    }
}
