import CSluiceShims
import Glibc
import SluiceLog
import SluiceLoop

/// Runs a relay on the calling thread until SIGINT, SIGTERM or SIGHUP.
public enum RelayRunner {
    public static func run(_ settings: RelaySettings) throws {
        let signalFD = sluice_signalfd_for_shutdown()
        let loop = try EventLoop()
        let relay = try RelayServer(settings: settings, loop: loop)
        if signalFD >= 0 {
            try loop.register(fd: signalFD, events: [.readable]) { _ in
                let signo = sluice_signalfd_read_signo(signalFD)
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
}
