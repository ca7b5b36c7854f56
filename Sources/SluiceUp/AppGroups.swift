import Glibc
import SluiceControl
import SluiceHost
import SluiceLog
import SluiceSystem

/// The per-application groups of one `sluice up`, below its parent cgroup `sluice/<tun>` (which
/// `HostRouting` created and removes with everything in it): `app-<n>` for each `sluice exec`, and
/// `added` for processes moved in with `sluice cgroup add`. Every process in them is tunnelled
/// (include mode) or bypasses the `--route-all` tunnel (exclude mode).
///
/// Thread rule: used on the client's loop thread only.
final class AppGroups {
    let mount: CGroupMount
    /// The parent group's directory.
    let parent: String
    let bypass: Bool
    private var next = 1
    /// Groups handed out and when, so the sweep leaves a group alone until its `exec` had time to enter.
    private var handedOut: [String: UInt64] = [:]
    /// Where each process moved in by `add` was before (relative to the cgroup2 root).
    private var origins: [Int32: String] = [:]

    init(mount: CGroupMount, tun: String, bypass: Bool) {
        self.mount = mount
        self.parent = mount.directory(HostRouting.appParentGroup(tun: tun))
        self.bypass = bypass
    }

    func handle(_ request: ControlRequest) -> ControlReply {
        do throws(HostError) {
            switch request {
            case .status, .reload:
                return .error("\(request.line.dropLast()) is answered by the tunnel, not its groups")
            case .newGroup(let wantsBypass):
                guard wantsBypass == bypass else {
                    return .error(bypass
                        ? "this tunnel sends everything through the relay (--route-all) already; use `sluice exec --bypass` to keep a program out"
                        : "--bypass needs a tunnel started with --route-all; without it only programs started with `sluice exec` use the tunnel")
                }
                while access(parent + "/app-\(next)", F_OK) == 0 { next += 1 }
                let name = "app-\(next)"
                next += 1
                try CGroupTree.create(parent + "/" + name)
                handedOut[name] = MonotonicClock.milliseconds()
                Log.debug("cgroup \(parent)/\(name) created", "apps")
                return .ok(parent + "/" + name)
            case .done(let name):
                handedOut[name] = nil
                if !CGroupTree.removeIfEmpty(parent + "/" + name) {
                    return .error("cgroup \(parent)/\(name) still holds processes; it is removed once they exit")
                }
                Log.debug("cgroup \(parent)/\(name) removed", "apps")
                return .ok("")
            case .add(let pid):
                guard kill(pid, 0) == 0 || errno == EPERM else { return .error("no process \(pid)") }
                let origin = CGroupTree.path(of: pid)
                try CGroupTree.create(parent + "/added")
                try CGroupTree.move(pid: pid, into: parent + "/added")
                if let origin, !origin.hasPrefix(HostRouting.appParentGroup(tun: "")) { origins[pid] = origin }
                return .ok(parent + "/added")
            case .del(let pid):
                guard let current = CGroupTree.path(of: pid), mount.directory(current).hasPrefix(parent + "/") else {
                    return .error("process \(pid) is not in one of this tunnel's groups")
                }
                var target = origins.removeValue(forKey: pid).map { mount.directory($0) } ?? mount.mountPoint
                if access(target, F_OK) != 0 { target = mount.mountPoint }
                try CGroupTree.move(pid: pid, into: target)
                return .ok(target)
            }
        } catch {
            return .error("\(error)")
        }
    }

    /// Removes empty `app-*` groups whose `exec` went away without saying `done` (killed), once they
    /// are a few seconds old; and the `added` group when empty.
    func sweep() {
        let now = MonotonicClock.milliseconds()
        for name in CGroupTree.children(of: parent) where name.hasPrefix("app-") || name == "added" {
            if let since = handedOut[name], now &- since < 5_000 { continue }
            let dir = parent + "/" + name
            if !CGroupTree.isPopulated(dir), CGroupTree.removeIfEmpty(dir) {
                handedOut[name] = nil
                Log.debug("cgroup \(dir) was empty; removed", "apps")
            }
        }
    }
}
