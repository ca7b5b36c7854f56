import Glibc

/// File operations on Sluice's cgroup v2 groups: the parent `sluice/<tun>` that `up` owns, the
/// `app-<id>` groups below it (one per `sluice exec`), moving processes, and removal.
///
/// A group can be removed (`rmdir`) only when no process is left in it and it has no child groups;
/// removing the tree first moves any remaining process to the cgroup2 root. Control path only.
public enum CGroupTree {
    /// Creates `path` and its missing parents (`mkdir -p`, mode 0755).
    public static func create(_ path: String) throws(HostError) {
        var current = ""
        for part in path.split(separator: "/") {
            current += "/" + part
            if mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw .cgroup(operation: "mkdir", path: current, errno: errno)
            }
        }
    }

    /// Writes `pid` into `group/cgroup.procs` (0 means the writing process).
    public static func move(pid: Int32, into group: String) throws(HostError) {
        let path = group + "/cgroup.procs"
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .cgroup(operation: "open", path: path, errno: errno) }
        defer { close(fd) }
        let text = Array("\(pid)\n".utf8)
        if write(fd, text, text.count) < 0 { throw .cgroup(operation: "move pid \(pid) into", path: path, errno: errno) }
    }

    /// The pids in `group/cgroup.procs`.
    public static func pids(in group: String) -> [Int32] {
        readText(group + "/cgroup.procs")?.split(separator: "\n").compactMap { Int32($0) } ?? []
    }

    /// Whether `group` or a group below it holds a process (`populated 1` in cgroup.events).
    public static func isPopulated(_ group: String) -> Bool {
        readText(group + "/cgroup.events")?.split(separator: "\n").contains("populated 1") ?? false
    }

    /// The names of the groups directly below `group`.
    public static func children(of group: String) -> [String] {
        guard let dir = opendir(group) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            guard entry.pointee.d_type == UInt8(DT_DIR) else { continue }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// The cgroup v2 path of `pid` relative to the root (`0::/PATH` in /proc/PID/cgroup).
    public static func path(of pid: Int32) -> String? {
        guard let text = readText("/proc/\(pid)/cgroup") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3).drop { $0 == "/" })
        }
        return nil
    }

    /// Removes `group` if it is empty; returns whether it is gone.
    @discardableResult
    public static func removeIfEmpty(_ group: String) -> Bool {
        rmdir(group) == 0 || errno == ENOENT
    }

    /// Moves every process in `group` and below to `root`, then removes the groups, deepest first.
    /// An absent tree counts as removed.
    public static func removeTree(_ group: String, movingTo root: String) throws(HostError) {
        if access(group, F_OK) != 0 { return }
        for child in children(of: group) { try removeTree(group + "/" + child, movingTo: root) }
        for pid in pids(in: group) { try? move(pid: pid, into: root) }
        // The kernel may take a moment to see the group empty after its last process moved or died.
        for _ in 0..<50 {
            if rmdir(group) == 0 || errno == ENOENT { return }
            guard errno == EBUSY else { break }
            usleep(20_000)
        }
        throw .cgroup(operation: "rmdir", path: group, errno: errno)
    }

    private static func readText(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
