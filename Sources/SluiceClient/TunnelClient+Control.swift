import Glibc
import SluiceHost
import SluiceLog

extension TunnelClient {
    /// With per-application routing installed: opens the control socket (`ControlServer`) and
    /// sweeps empty groups every second. Without it there is no socket, and `sluice exec` says so.
    func startControl() {
        guard let mount = host?.appMount else { return }
        let apps = AppGroups(mount: mount, tun: settings.tunName, bypass: settings.routeAll)
        self.apps = apps
        scheduleSweep(apps)
        do throws(HostError) {
            control = try ControlServer(tun: settings.tunName, loop: loop) { [unowned apps] request in apps.handle(request) }
        } catch {
            Log.warning("no control socket, so sluice exec and sluice cgroup cannot reach this tunnel: \(error)", "client")
        }
    }

    private func scheduleSweep(_ apps: AppGroups) {
        _ = loop.schedule(afterMilliseconds: 1_000) { [weak self, unowned apps] in
            apps.sweep()
            self?.scheduleSweep(apps)
        }
    }
}
