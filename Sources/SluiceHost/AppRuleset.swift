/// The nftables table that picks out per-application traffic (`sluice exec`, `sluice cgroup add`,
/// `--app-cgroup`), as nft text for libnftables. Pure: `text` only builds the string.
///
/// A route-type output chain sets `mark` on every packet of a socket whose cgroup lies in one of
/// `groups` (`socket cgroupv2 level N "PATH"`, which matches the group and all below it); because the
/// chain is of type route, the kernel redoes the routing decision after the mark, and the policy rule
/// `fwmark <mark> lookup T` sends it to the tunnel's table (include) or the main table (bypass).
///
/// The socket chose its source address by the first, unmarked route, so a nat chain masquerades
/// marked packets that leave by the other way: into the TUN in include mode, out of anything but the
/// TUN in bypass mode. Conntrack then gives replies and established flows the same path back.
public struct AppRuleset: Hashable, Sendable, CustomStringConvertible {
    /// One cgroup to match: nft's path (relative to /sys/fs/cgroup) and its depth in the v2 tree.
    public struct Group: Hashable, Sendable {
        public var nftPath: String
        public var level: Int
        public init(nftPath: String, level: Int) {
            self.nftPath = nftPath
            self.level = level
        }
    }

    public var tun: String
    public var mark: UInt32
    public var groups: [Group]
    /// Exclude mode: marked traffic bypasses a `--route-all` tunnel.
    public var bypass: Bool

    public init(tun: String, mark: UInt32, groups: [Group], bypass: Bool) {
        self.tun = tun
        self.mark = mark
        self.groups = groups
        self.bypass = bypass
    }

    /// `inet sluice_apps_<tun>`, with characters nft identifiers cannot hold replaced by `_`.
    public var table: String {
        let safe = String(tun.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") ? $0 : "_" })
        return "\(FirewallRuleset.family) sluice_apps_\(safe)"
    }

    public var description: String { "nftables table \(table) (\(bypass ? "applications bypass" : "applications tunnelled"))" }

    public var text: String {
        let mark = "0x" + String(self.mark, radix: 16)
        let tunName = FirewallRuleset.quoted(tun)
        var lines = [
            "create table \(table)",
            "table \(table) {",
            "\tchain output {",
            "\t\ttype route hook output priority mangle; policy accept;",
        ]
        lines += groups.map { "\t\tsocket cgroupv2 level \($0.level) \"\($0.nftPath)\" meta mark set \(mark)" }
        lines += [
            "\t}",
            "\tchain postrouting {",
            "\t\ttype nat hook postrouting priority srcnat; policy accept;",
            bypass ? "\t\tmeta mark \(mark) oifname != { \(tunName), \"lo\" } masquerade"
                : "\t\tmeta mark \(mark) oifname \(tunName) masquerade",
            "\t}",
            "}",
        ]
        return lines.joined(separator: "\n") + "\n"
    }
}
