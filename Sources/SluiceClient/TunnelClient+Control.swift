import Glibc
import SluiceHost
import SluiceLog
import SluiceLoop

extension TunnelClient {
    /// With per-application routing installed: opens the control socket (`ControlServer`) and
    /// sweeps empty groups every second. Without it there is no socket, and `sluice exec` says so.
    func startControl() {
        guard let mount = host?.appMount else { return }
        let apps = AppGroups(mount: mount, tun: settings.tunName, bypass: settings.routeAll)
        self.apps = apps
        Self.sweepEverySecond(apps, on: loop)
        do throws(HostError) {
            control = try ControlServer(tun: settings.tunName, loop: loop) { [unowned apps] request in apps.handle(request) }
        } catch {
            Log.warning("no control socket, so sluice exec and sluice cgroup cannot reach this tunnel: \(error)", "client")
        }
    }

    /// Not capturing the client: a weak reference to it would slow every retain and release of it
    /// on the packet path (see EventLoop.schedule). The sweep ends when the client lets go of `apps`.
    private static func sweepEverySecond(_ apps: AppGroups, on loop: EventLoop) {
        _ = loop.schedule(afterMilliseconds: 1_000) { [weak apps, unowned loop] in
            guard let apps else { return }
            apps.sweep()
            sweepEverySecond(apps, on: loop)
        }
    }
}
