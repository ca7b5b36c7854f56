import Glibc
import SluiceHost
import SluiceLog

extension TunnelClient {
    /// Opens the control socket (`ControlServer`) and, when per-application routing is installed,
    /// sweeps empty groups every second. A tunnel without cgroup v2 still answers, with the reason.
    func startControl() {
        if let mount = host?.appMount {
            let apps = AppGroups(mount: mount, tun: settings.tunName, bypass: settings.routeAll)
            self.apps = apps
            scheduleSweep(apps)
        }
        do throws(HostError) {
            control = try ControlServer(tun: settings.tunName, loop: loop) { [unowned self] request in
                guard let apps = self.apps else {
                    return .error("tunnel \(self.settings.tunName) runs without per-application routing (no usable cgroup v2; see its log)")
                }
                return apps.handle(request)
            }
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
