import CSluiceHostShims
import Glibc
import SluiceCarrier
import SluiceConfig
import SluiceLog
import SluiceLoop
import SluiceProxy
import SluiceTunnel
import SluiceWire

/// `sluice socks`: the SOCKS5 and HTTP proxy front-end, in the foreground until SIGINT or SIGTERM.
enum ProxyCommand {
    static func run(_ config: ProxyConfig) throws {
        if let level = LogLevel(name: config.logLevel) { Log.level = level }
        for warning in config.warnings { Log.warning("\(warning)") }
        let targets = try config.relays.map {
            try carrierTarget(relay: $0.endpoint, relayPublicKey: $0.publicKey, privateKey: config.privateKey, psk: config.psk)
        }
        let keepalive = KeepaliveSettings(intervalMilliseconds: Commands.milliseconds(config.pingInterval), mode: .probe(misses: config.pingMisses))
        do {
            try ProxyRunner.run(listen: config.listen, targets: targets, policy: RelayPolicy(rawValue: config.relayPolicy) ?? .failover,
                                carriers: config.carriers, keepalive: keepalive, users: ProxyUsers(config.users))
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 1)
        }
    }
}

/// `sluice socks` in the foreground: carriers to the relays (`RelayUpstream`) and the proxy on one
/// event loop, until SIGINT or SIGTERM. Needs no root: no TUN, no routes, no marks.
enum ProxyRunner {
    static func run(listen: SocketEndpoint, targets: [CarrierTarget], policy: RelayPolicy, carriers: Int, keepalive: KeepaliveSettings,
                    users: ProxyUsers) throws {
        let loop = try EventLoop()
        let upstream = RelayUpstream(targets: targets, policy: policy, carriers: carriers, keepalive: keepalive, loop: loop)
        let server = try ProxyServer(listen: listen, upstream: upstream, users: users, loop: loop)
        let signalFD = sluice_signalfd_for_shutdown()
        if signalFD >= 0 {
            try loop.register(fd: signalFD, events: [.readable]) { _ in
                Log.info("signal \(sluice_signalfd_read_signo(signalFD)) received; shutting down", "proxy")
                loop.stop()
            }
        }
        upstream.start()
        Log.info("SOCKS5 and HTTP proxy on \(server.listeningEndpoint)" + (users.isEmpty ? "" : " (authentication required)")
            + "; streams go to " + (targets.count == 1 ? "the relay " : "the relays ") + upstream.name, "proxy")
        loop.run()
        server.shutdown()
        upstream.stop()
        if signalFD >= 0 {
            loop.deregister(fd: signalFD)
            close(signalFD)
        }
    }
}
