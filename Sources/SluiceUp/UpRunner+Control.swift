import Glibc
import SluiceControl
import SluiceHost
import SluiceJSON
import SluiceLog
import SluiceLoop
import SluiceTunnel

/// What `sluice status` reads from a running `up` (the reply to `status`, one line of JSON;
/// docs/configuration.md, "sluice status").
public struct TunnelStatus: Codable, Sendable, Equatable {
    /// "tunnel": what distinguishes this reply from a relay's.
    public var kind = "tunnel"
    public var tun: String
    public var pid: Int32
    public var addresses: [String]
    public var statistics: TunnelStatistics
}

extension UpRunner {
    /// Opens the control socket (`sluice status`, and with per-application routing installed
    /// `sluice exec` and `sluice cgroup`), and sweeps empty application groups every second.
    func startControl() {
        if let mount = setup?.appMount {
            let apps = AppGroups(mount: mount, tun: host.tun, bypass: host.routeAll)
            self.apps = apps
            Self.sweepEverySecond(apps, on: loop)
        }
        do throws(ControlError) {
            control = try ControlServer(path: ControlServer.path(forTunnel: host.tun), loop: loop) { [unowned self] in self.handle($0) }
        } catch {
            Log.warning("no control socket, so sluice status, exec and cgroup cannot reach this tunnel: \(error)", "client")
        }
    }

    private func handle(_ request: ControlRequest) -> ControlReply {
        switch request {
        case .status:
            let status = TunnelStatus(tun: host.tun, pid: getpid(), addresses: host.addresses.map(\.description),
                                      statistics: engine.statistics())
            do {
                return .ok(JSONWriter.text(try JSONValueEncoder().encode(status), pretty: false))
            } catch {
                return .error("status could not be encoded: \(error)")
            }
        case .reload:
            return .error("reload is for a relay; a tunnel takes new settings by a restart (systemctl restart sluice@NAME)")
        case .newGroup, .done, .add, .del:
            guard let apps else {
                return .error("tunnel \(host.tun) is up but without per-application routing: its sluice up found no cgroup v2 mount "
                    + "under /sys/fs/cgroup (was it started with `ip netns exec`, which hides it? see its log)")
            }
            return apps.handle(request)
        }
    }

    /// Not capturing the runner: the sweep ends when the runner lets go of `apps`.
    private static func sweepEverySecond(_ apps: AppGroups, on loop: EventLoop) {
        _ = loop.schedule(afterMilliseconds: 1_000) { [weak apps, unowned loop] in
            guard let apps else { return }
            apps.sweep()
            sweepEverySecond(apps, on: loop)
        }
    }
}
