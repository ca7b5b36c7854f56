import CSluiceHostShims
import Glibc
import SluiceControl
import SluiceJSON
import SluiceLog
import SluiceLoop
import SluiceSystem

/// Runs a relay on the calling thread until SIGINT or SIGTERM, with its control socket (`sluice status
/// --relay`, `reload`); SIGHUP reloads its settings (`RelayServer.reload()`).
public enum RelayRunner {
    /// - Parameters:
    ///   - controlPath: where the control socket goes: `nil` — the default path for the listening
    ///     port, skipped with a warning when it cannot be made (a relay run by an ordinary user cannot
    ///     write /run/sluice); a path — that path, and failing to make it is an error.
    ///   - settingsSource: reads the settings again at SIGHUP and `reload` — the same command line
    ///     and config file the relay started with.
    public static func run(_ settings: RelaySettings, controlPath: String? = nil,
                           settingsSource: (() throws -> RelaySettings)? = nil) throws {
        raiseOpenFileLimit(for: settings)
        let signalFD = sluice_signalfd_for_shutdown()
        let loop = try EventLoop()
        let relay = try RelayServer(settings: settings, loop: loop, settingsSource: settingsSource)
        let control: ControlServer?
        do throws(ControlError) {
            let path = controlPath ?? ControlServer.path(forRelayPort: relay.listeningEndpoint.port)
            control = try ControlServer(path: path, loop: loop) { request in handle(request, relay: relay) }
        } catch {
            if controlPath != nil {
                relay.shutdown()
                throw error
            }
            Log.warning("no control socket, so sluice status cannot reach this relay: \(error)", "relay")
            control = nil
        }
        if signalFD >= 0 {
            try loop.register(fd: signalFD, events: [.readable]) { _ in
                let signo = sluice_signalfd_read_signo(signalFD)
                if signo == SIGHUP {
                    Log.info("signal \(signo) (SIGHUP) received; reloading", "relay")
                    relay.reload()
                    return
                }
                Log.info("signal \(signo) received; shutting down", "relay")
                loop.stop()
            }
        }
        loop.run()
        control?.shutdown()
        relay.shutdown()
        if signalFD >= 0 {
            loop.deregister(fd: signalFD)
            close(signalFD)
        }
    }

    private static func handle(_ request: ControlRequest, relay: RelayServer) -> ControlReply {
        switch request {
        case .status:
            do {
                let status = RelayStatus(pid: getpid(), statistics: relay.statistics())
                return .ok(JSONWriter.text(try JSONValueEncoder().encode(status), pretty: false))
            } catch {
                return .error("status could not be encoded: \(error)")
            }
        case .reload:
            switch relay.reload() {
            case .applied(let report): return .ok("reloaded: \(report)")
            case .refused(let why): return .error("reload refused, the running configuration stays: \(why)")
            }
        case .newGroup, .done, .add, .del:
            return .error("this is a relay's control socket; sluice exec and sluice cgroup talk to a tunnel (sluice up)")
        }
    }

    /// Every stream and UDP association holds a descriptor: the soft limit goes up to the hard one,
    /// and a hard limit too low for one client at its caps is worth a line.
    private static func raiseOpenFileLimit(for settings: RelaySettings) {
        let before = OpenFileLimit.current()
        let now = OpenFileLimit.raiseToHard()
        if now > before.soft { Log.debug("open-file limit raised from \(before.soft) to \(now)", "relay") }
        let oneClient = UInt64(settings.maxStreamsPerClient + settings.maxUDPMappingsPerClient + settings.maxPendingHandshakes + 64)
        if now < oneClient {
            Log.warning("the open-file limit is \(now) (hard limit \(before.hard)): fewer than one client at its caps needs "
                        + "(\(oneClient)); streams past it fail — raise it (ulimit -n, or LimitNOFILE= in a systemd unit)", "relay")
        }
    }
}
