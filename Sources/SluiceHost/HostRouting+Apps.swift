import SluiceWire

extension HostRouting {
    /// The mark per-application traffic gets from `AppRuleset`: 0x534d, one above the carriers' "SL".
    public static let defaultAppMark: UInt32 = 0x534d
    /// The cgroup (relative to the cgroup2 root) under which Sluice keeps the groups of `tun`.
    public static func appParentGroup(tun: String) -> String { "sluice/\(tun)" }

    /// The changes for per-application routing: the parent cgroup `sluice/<tun>` (the groups of
    /// `sluice exec` and `sluice cgroup add` live below it); in include mode the default routes through
    /// `interface` in `appTable`; per family the rule `fwmark <appMark> lookup <appTable or main>`
    /// at `rulePriority - 4`, ahead of `--route-all`'s rules; last the nftables table that marks the
    /// sockets of the parent group and of `extraGroups` (`--app-cgroup`, relative to the cgroup2 root).
    ///
    /// Returns nil when the cgroup2 mount lies outside /sys/fs/cgroup, where nft cannot resolve paths.
    public static func appPlan(
        mount: CGroupMount, tun: String, interface: String, extraGroups: [String], bypass: Bool, ipv6: Bool,
        appTable: UInt32, appMark: UInt32 = defaultAppMark, rulePriority: UInt32 = defaultRulePriority
    ) -> [HostChange]? {
        let parent = appParentGroup(tun: tun)
        var groups: [AppRuleset.Group] = []
        for relative in [parent] + extraGroups {
            guard let path = mount.nftPath(relative) else { return nil }
            groups.append(AppRuleset.Group(nftPath: path, level: CGroupMount.level(relative)))
        }
        var plan: [HostChange] = [.cgroupTree(path: mount.directory(parent), root: mount.mountPoint)]
        let families: [PolicyRule.Family] = ipv6 ? [.ipv4, .ipv6] : [.ipv4]
        if !bypass {
            plan += families.map { .route(Route(IPPrefix($0 == .ipv4 ? "0.0.0.0/0" : "::/0")!, dev: interface, table: appTable)) }
        }
        plan += families.map {
            .rule(PolicyRule(family: $0, priority: rulePriority - 4, table: bypass ? mainTable : appTable, fwmark: appMark))
        }
        plan.append(.appFirewall(AppRuleset(tun: interface, mark: appMark, groups: groups, bypass: bypass)))
        return plan
    }
}
