import CSluiceShims
import Glibc
import SluiceCarrier
import SluiceHost
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceMux
import SluiceStack
import SluiceWire

/// `sluice up`: the TUN device, its addresses and routes, lwIP and the carriers, on one event loop.
///
/// Data path (client): TUN read → lwIP (accept-any) → FlowBridge → MuxStream → Carrier (records) →
/// relay; and back: Carrier → MuxStream → FlowBridge → lwIP → TUN write. The loop's thread owns lwIP;
/// nothing else touches it.
public final class TunnelClient: TCPStackDelegate {
    let settings: ClientSettings
    let loop: EventLoop
    let tun: TunDevice
    private(set) var host: HostSetup?
    private(set) var stack: TCPStack!
    private(set) var pool: CarrierPool!
    private(set) var udp: UDPForwarder!
    let reassembler = FragmentReassembler()
    var output = [UInt8](repeating: 0, count: 65536 + 64)
    var fragmentScratch = [UInt8](repeating: 0, count: 65536)
    var nextFragmentID: UInt32 = 1
    var counters = InputCounters()
    /// Destinations the relay's policy refused, logged once each.
    var refusedDestinations = RefusedDestinations()
    private var bridges: [FlowKey: FlowBridge] = [:]
    private var packet = [UInt8](repeating: 0, count: VirtioNetHeader.length + 65535)
    /// GSO output toward the TUN; nil when the TUN was opened without offloads.
    private(set) var coalescer: SegmentCoalescer?
    private var signalFD: Int32 = -1
    /// Per-application routing (`sluice exec`, `sluice cgroup`): the groups and the control socket.
    var apps: AppGroups?
    var control: ControlServer?

    /// Cleans up after a crashed `up` of the same tunnel, opens the TUN and installs addresses,
    /// routes, rules, firewall and resolver (`HostSetup`). On failure nothing stays installed.
    public init(settings: ClientSettings) throws {
        self.settings = settings
        if sluice_checksum_self_test() == 0 {
            Log.warning("the fast checksum routine disagreed with lwIP's reference; using the reference", "client")
        }
        loop = try EventLoop()
        let host = try HostSetup(tun: settings.tunName)
        self.host = host
        let offloaded: Bool
        do {
            (tun, offloaded) = try TunOffload.open(name: settings.tunName, offloads: settings.tunOffload)
        } catch {
            host.teardown()
            throw error
        }
        do {
            try host.install(settings: settings, interface: tun.name)
            if offloaded { coalescer = TunOffload.coalescer(for: tun, mtu: settings.mtu) }
            // With offloads lwIP's segments may be longer than the MTU: GSO writes cut them.
            stack = try TCPStack(mtu: settings.mtu, largeSegments: offloaded) { [unowned self] packet in self.writeTUN(packet) }
        } catch {
            teardownHost()
            throw error
        }
        stack.delegate = self
        pool = CarrierPool(settings: settings, loop: loop)
        udp = UDPForwarder(client: self)
    }

    /// Runs until SIGINT, SIGTERM or SIGHUP, then removes everything it installed.
    public func run() throws {
        signalFD = sluice_signalfd_for_shutdown()
        if signalFD >= 0 {
            try loop.register(fd: signalFD, events: [.readable]) { [unowned self] _ in
                let signo = sluice_signalfd_read_signo(self.signalFD)
                Log.info("signal \(signo) received; shutting down", "client")
                self.loop.stop()
            }
        }
        try loop.register(fd: tun.fd, events: [.readable]) { [unowned self] _ in self.readTUN() }
        startControl()
        loop.sleepBound = { [unowned self] in self.stack.timerSleepMilliseconds }
        loop.addEndOfTurnHook { [unowned self] in
            self.stack.runTimers()
            self.stack.flushOutput()
            self.coalescer?.flush()
        }
        var routed = settings.routes.map(\.description)
        if settings.routeAll { routed.insert("all (--route-all)", at: 0) }
        let guards = (settings.killSwitch ? "; kill switch on" : "") + (settings.blockIPv6 ? "; IPv6 blocked" : "")
        Log.info("tunnel \(tun.name) up: \(settings.addresses.map(\.description).joined(separator: ", ")); routes \(routed.joined(separator: ", ")); relay \(settings.relay)\(guards)", "client")
        pool.start()
        loop.run()
        shutdown()
    }

    private func shutdown() {
        udp.closeAll()
        pool.stop()
        stack.flushOutput()
        stack.shutdown()
        loop.deregister(fd: tun.fd)
        if signalFD >= 0 {
            loop.deregister(fd: signalFD)
            close(signalFD)
        }
        control?.shutdown()
        control = nil
        teardownHost()
        Log.info("tunnel \(tun.name) down; everything it installed is removed", "client")
    }

    private func teardownHost() {
        host?.teardown()
        host = nil
    }

    private func readTUN() {
        for _ in 0..<256 {
            let n: Int
            do {
                let result = try packet.withUnsafeMutableBytes { try tun.read(into: $0) }
                guard case .transferred(let count) = result else { return }
                n = count
            } catch {
                Log.warning("TUN read: \(error)", "client")
                return
            }
            packet.withUnsafeMutableBytes { raw in
                guard coalescer != nil else {
                    dispatch(UnsafeRawBufferPointer(rebasing: raw[0..<n]))
                    return
                }
                guard n > VirtioNetHeader.length else { return }
                let header = VirtioNetHeader(UnsafeRawBufferPointer(rebasing: raw[0..<VirtioNetHeader.length]))
                let body = UnsafeMutableRawBufferPointer(rebasing: raw[VirtioNetHeader.length..<n])
                guard header.completeChecksum(in: body) else {
                    counters.malformed += 1
                    return
                }
                dispatch(UnsafeRawBufferPointer(body))
            }
        }
    }

    // MARK: TCPStackDelegate

    public func stack(_ stack: TCPStack, didReceiveSYNFor key: FlowKey) {
        guard let carrier = pool.pick() else {
            Log.debug("flow \(key) refused: no carrier is up", "client")
            stack.refuse(key)
            return
        }
        let bridge = FlowBridge(key: key, client: self)
        bridges[key] = bridge
        // DNS over TCP follows --dns like DNS over UDP; lwIP still answers as the address dialled.
        bridge.open(on: carrier, to: dnsResolver(for: key.destination, from: key.application) ?? key.destination)
    }

    public func stack(_ stack: TCPStack, didAbandon key: FlowKey) { bridges[key]?.abandon() }

    public func stack(_ stack: TCPStack, didAccept flow: TCPFlow) {
        guard let bridge = bridges[flow.key] else {
            flow.abort()
            return
        }
        bridge.attach(flow)
    }

    func bridgeEnded(_ bridge: FlowBridge) {
        if bridges[bridge.key] === bridge { bridges[bridge.key] = nil }
    }
}
