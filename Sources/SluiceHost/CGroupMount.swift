import Glibc

/// Where cgroup v2 is mounted, found in `/proc/self/mountinfo`: `/sys/fs/cgroup` on most systems,
/// `/sys/fs/cgroup/unified` on hybrid ones (cgroup v1 controllers beside a v2 tree).
///
/// nftables' `socket cgroupv2 level N "PATH"` resolves PATH relative to `/sys/fs/cgroup` when the
/// ruleset is loaded, so on a hybrid system the path starts with `unified/`; `nftPath` adds that.
public struct CGroupMount: Hashable, Sendable {
    /// The directory nft resolves cgroup paths against.
    public static let nftBase = "/sys/fs/cgroup"

    /// The cgroup2 mount point, without a trailing slash.
    public var mountPoint: String

    public init(mountPoint: String) {
        self.mountPoint = mountPoint.count > 1 && mountPoint.hasSuffix("/") ? String(mountPoint.dropLast()) : mountPoint
    }

    /// The first cgroup2 mount in mountinfo text, or nil. Each line is
    /// `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS`;
    /// the mount point escapes space, tab, newline and backslash as `\040`-style octal.
    /// Split on single characters only: a String separator (`split(separator: " - ")`) is
    /// _StringProcessing's generic algorithm, whose code and type metadata every `up` then loaded at start.
    public static func parse(mountinfo: String) -> CGroupMount? {
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), dash >= 5, dash + 1 < fields.count,
                  fields[dash + 1] == "cgroup2" else { continue }
            return CGroupMount(mountPoint: unescape(fields[4]))
        }
        return nil
    }

    /// Reads `/proc/self/mountinfo`; throws `.noCGroup2` when nothing there is cgroup v2.
    public static func find(mountinfoPath: String = "/proc/self/mountinfo") throws(HostError) -> CGroupMount {
        let bytes: [UInt8]
        do throws(HostError) {
            bytes = try FileIO.read(mountinfoPath)
        } catch {
            throw .cgroup(operation: "read", path: mountinfoPath, errno: error.errno ?? EIO)
        }
        guard let mount = parse(mountinfo: String(decoding: bytes, as: UTF8.self)) else { throw .noCGroup2 }
        return mount
    }

    /// The directory of the cgroup `relative` (to the cgroup2 root), such as `sluice/tun0`.
    public func directory(_ relative: String) -> String {
        relative.isEmpty ? mountPoint : mountPoint + "/" + relative
    }

    /// The path nft wants for the cgroup `relative`: relative to `/sys/fs/cgroup`. Nil when the
    /// cgroup2 mount is not under `/sys/fs/cgroup`, where nft cannot see it.
    public func nftPath(_ relative: String) -> String? {
        if mountPoint == Self.nftBase { return relative }
        guard mountPoint.hasPrefix(Self.nftBase + "/") else { return nil }
        let prefix = String(mountPoint.dropFirst(Self.nftBase.count + 1))
        return relative.isEmpty ? prefix : prefix + "/" + relative
    }

    /// The depth of the cgroup `relative` below the cgroup2 root, nft's `level`: `sluice/tun0` is 2.
    public static func level(_ relative: String) -> Int {
        relative.split(separator: "/").count
    }

    /// `relative` with leading and trailing slashes and empty components removed, or nil if it has
    /// `.`/`..` components or quotes (which the nft string could not hold).
    public static func normalized(_ relative: String) -> String? {
        let parts = relative.split(separator: "/")
        guard !parts.isEmpty, !parts.contains(where: { $0 == "." || $0 == ".." || $0.contains("\"") || $0.contains("\n") }) else { return nil }
        return parts.joined(separator: "/")
    }

    private static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(field.utf8)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "\\"), i + 3 < utf8.count,
               let value = UInt8(String(decoding: utf8[(i + 1)...(i + 3)], as: UTF8.self), radix: 8) {
                bytes.append(value)
                i += 4
            } else {
                bytes.append(utf8[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
