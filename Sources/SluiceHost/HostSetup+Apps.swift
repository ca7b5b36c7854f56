import Glibc
import SluiceLog

extension HostSetup {
    /// The per-application part of the plan (`HostRouting.appPlan`): groups of `sluice exec` and
    /// `--app-cgroup` are tunnelled, or with `--route-all` bypass the tunnel. Without cgroup v2 the
    /// tunnel comes up without it (and `sluice exec` says why), unless `--app-cgroup` asks for it.
    func appPlan(settings: HostConfiguration, interface: String) throws(HostError) -> [HostChange] {
        let mount: CGroupMount
        do throws(HostError) {
            mount = try CGroupMount.find()
        } catch {
            if !settings.appCGroups.isEmpty { throw error }
            Log.info("per-application routing (sluice exec) is off: \(error)", "host")
            return []
        }
        let appMark = settings.fwmark == HostRouting.defaultAppMark ? HostRouting.defaultAppMark + 1 : HostRouting.defaultAppMark
        guard let plan = HostRouting.appPlan(
            mount: mount, tun: settings.tun, interface: interface, extraGroups: settings.appCGroups,
            bypass: settings.routeAll, ipv6: !settings.blockIPv6, appTable: settings.table &+ 2, appMark: appMark,
            rulePriority: HostRouting.defaultRulePriority)
        else {
            let problem = "cgroup v2 is mounted at \(mount.mountPoint), outside \(CGroupMount.nftBase), where nftables cannot match it"
            if !settings.appCGroups.isEmpty { throw .cgroup(operation: problem + ":", path: mount.mountPoint, errno: EOPNOTSUPP) }
            Log.info("per-application routing (sluice exec) is off: \(problem)", "host")
            return []
        }
        appMount = mount
        return plan
    }
}
