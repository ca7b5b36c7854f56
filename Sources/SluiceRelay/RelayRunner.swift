import CSluiceShims
import Glibc
import SluiceLog
import SluiceLoop
import SluiceSystem

/// Runs a relay on the calling thread until SIGINT or SIGTERM; SIGHUP reloads its settings
/// (`RelayServer.reload()`).
public enum RelayRunner {
    /// - Parameter settingsSource: reads the settings again at SIGHUP — the same command line and
    ///   config file the relay started with.
    public static func run(_ settings: RelaySettings, settingsSource: (() throws -> RelaySettings)? = nil) throws {
        raiseOpenFileLimit(for: settings)
        let signalFD = sluice_signalfd_for_shutdown()
        let loop = try EventLoop()
        let relay = try RelayServer(settings: settings, loop: loop, settingsSource: settingsSource)
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
        relay.shutdown()
        if signalFD >= 0 {
            loop.deregister(fd: signalFD)
            close(signalFD)
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
