import CSluiceHostShims
import Glibc
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
        let target = try carrierTarget(relay: config.relay, relayPublicKey: config.relayPublicKey, privateKey: config.privateKey, psk: config.psk)
        do {
            try ProxyRunner.run(listen: config.listen, target: target, carriers: config.carriers, users: ProxyUsers(config.users))
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 1)
        }
    }
}

/// `sluice socks` in the foreground: carriers to the relay (`RelayUpstream`) and the proxy on one
/// event loop, until SIGINT or SIGTERM. Needs no root: no TUN, no routes, no marks.
enum ProxyRunner {
    static func run(listen: SocketEndpoint, target: CarrierTarget, carriers: Int, users: ProxyUsers) throws {
        let loop = try EventLoop()
        let upstream = RelayUpstream(target: target, carriers: carriers, loop: loop)
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
            + "; streams go to the relay \(target.relay)", "proxy")
        loop.run()
        server.shutdown()
        upstream.stop()
        if signalFD >= 0 {
            loop.deregister(fd: signalFD)
            close(signalFD)
        }
    }
}
