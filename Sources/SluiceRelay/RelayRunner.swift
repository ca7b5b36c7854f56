import CSluiceHostShims
import Glibc
import SluiceControl
import SluiceJSON
import SluiceLog
import SluiceLoop
import SluiceSystem

/// Runs a relay on the calling thread until SIGINT, SIGTERM or SIGHUP, with its control socket
/// (`sluice status --relay`).
public enum RelayRunner {
    /// Where the control socket goes: `nil` — the default path for the listening port, skipped with a
    /// warning when it cannot be made (a relay run by an ordinary user cannot write /run/sluice);
    /// a path — that path, and failing to make it is an error.
    public static func run(_ settings: RelaySettings, controlPath: String? = nil) throws {
        let signalFD = sluice_signalfd_for_shutdown()
        let loop = try EventLoop()
        let relay = try RelayServer(settings: settings, loop: loop)
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
        case .newGroup, .done, .add, .del:
            return .error("this is a relay's control socket; sluice exec and sluice cgroup talk to a tunnel (sluice up)")
        }
    }
}
