import Glibc
import SluiceSystem
import SluiceJSON
import SluiceLog

/// The record `sluice up` keeps of what it installed, in `/run/sluice/<tun>.json`: who owns it (pid
/// and the process's start time, so a reused pid is not mistaken for the owner), where (network and
/// mount namespace), and the installed steps in order. `up` writes it before it changes anything and
/// after every step, and removes it when it has undone everything. After a crash, `sluice down` (or
/// the next `up`) reads it and undoes exactly those steps, newest first, and nothing else.
///
/// `/run` is a tmpfs: after a reboot the record is gone, and so is everything it could describe.
public struct HostState: Codable, Equatable, Sendable {
    public static let directory = RuntimeDirectory.path
    public static let currentVersion = 1

    public var version: Int
    public var tun: String
    public var pid: Int32
    /// The owner's start time in clock ticks after boot (`/proc/PID/stat` field 22).
    public var processStart: UInt64
    /// Inode of the owner's `/proc/self/ns/net`.
    public var netNamespace: UInt64
    /// Inode of the owner's `/proc/self/ns/mnt` (the resolver file belongs to a mount namespace).
    public var mountNamespace: UInt64
    public var steps: [HostStep]

    public init(tun: String, pid: Int32, processStart: UInt64, netNamespace: UInt64, mountNamespace: UInt64, steps: [HostStep] = []) {
        self.version = Self.currentVersion
        self.tun = tun
        self.pid = pid
        self.processStart = processStart
        self.netNamespace = netNamespace
        self.mountNamespace = mountNamespace
        self.steps = steps
    }

    /// A record owned by this process, with no steps yet.
    public static func forThisProcess(tun: String) -> HostState {
        let pid = getpid()
        return HostState(tun: tun, pid: pid, processStart: processStartTime(pid) ?? 0,
                         netNamespace: namespaceInode("net"), mountNamespace: namespaceInode("mnt"))
    }

    /// `/run/sluice/<tun>.json`.
    public static func path(for tun: String, directory: String = directory) -> String {
        "\(directory)/\(tun).json"
    }

    /// Where the original resolver file is saved while the tunnel is up.
    public static func resolverBackupPath(for tun: String, directory: String = directory) -> String {
        "\(directory)/\(tun).resolv.conf"
    }

    // MARK: encoding

    /// The record as pretty-printed JSON with sorted keys (the layout Foundation's `JSONEncoder` gave
    /// it, so a record written by an older Sluice reads the same), ending in a newline.
    public func encoded() -> [UInt8] {
        // Every member is a plain value with a total encoding; a failure here is a programming error.
        let value = try! JSONValueEncoder().encode(self)
        return JSONWriter.write(value) + [UInt8(ascii: "\n")]
    }

    public static func decode(_ bytes: [UInt8], path: String) throws(HostError) -> HostState {
        let state: HostState
        do {
            state = try JSONValueDecoder().decode(HostState.self, from: try JSONParser.parse(bytes))
        } catch {
            let reason = (error as? JSONError).map { "not JSON: \($0)" } ?? JSONValueDecoder.describe(error)
            throw .stateFile(path: path, problem: "not a Sluice state record (\(reason)); remove it by hand once you have checked `ip rule`, `ip route show table all` and `nft list ruleset`")
        }
        guard state.version == currentVersion else {
            throw .stateFile(path: path, problem: "version \(state.version) is not \(currentVersion); use the sluice that wrote it")
        }
        return state
    }

    // MARK: files

    /// The record at `path`, or nil if there is none.
    public static func load(path: String) throws(HostError) -> HostState? {
        guard access(path, F_OK) == 0 else { return nil }
        let bytes: [UInt8]
        do throws(HostError) {
            bytes = try FileIO.read(path)
        } catch {
            throw .stateFile(path: path, problem: "cannot be read: \(error)")
        }
        return try decode(bytes, path: path)
    }

    /// Writes the record atomically (a temporary file renamed over `path`), creating the directory
    /// (mode 0700) if needed.
    public func save(to path: String) throws(HostError) {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty, mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw .stateFile(path: path, problem: "cannot create \(directory): \(SystemError.describe(errno))")
        }
        let temporary = path + ".new"
        do throws(HostError) {
            unlink(temporary)
            try FileIO.write(temporary, encoded(), flags: O_CREAT | O_TRUNC | O_EXCL, mode: 0o600)
        } catch {
            throw .stateFile(path: path, problem: "cannot be written: \(error)")
        }
        guard rename(temporary, path) == 0 else {
            let e = errno
            unlink(temporary)
            throw .stateFile(path: path, problem: "cannot be written: \(SystemError.describe(e))")
        }
    }

    /// Removes the record, and its directory if that is now empty.
    public static func remove(path: String) {
        unlink(path)
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty { rmdir(directory) }  // fails, harmlessly, while other records remain
    }

    // MARK: ownership

    /// Whether the process that wrote the record still runs (same pid and start time; a zombie,
    /// exited but not yet reaped by its parent, counts as gone).
    public var ownerIsAlive: Bool {
        guard kill(pid, 0) == 0 || errno == EPERM, let stat = Self.processStat(pid) else { return false }
        return stat.state != "Z" && stat.start == processStart
    }

    /// "network" or "mount" when this process is in another namespace than the record's owner was.
    public var foreignNamespace: String? {
        if Self.namespaceInode("net") != netNamespace { return "network" }
        if Self.namespaceInode("mnt") != mountNamespace { return "mount" }
        return nil
    }

    /// Undoes what the (dead) owner of the record at `path` installed, then removes the record.
    /// Nothing to do without a record. Refuses, changing nothing, when the owner still runs or the
    /// record comes from another namespace. Returns the undo steps that failed (already logged).
    @discardableResult
    public static func undoLeftovers(at path: String) throws(HostError) -> [HostError] {
        guard let state = try load(path: path) else { return [] }
        if state.ownerIsAlive { throw .alreadyUp(tun: state.tun, pid: state.pid, stateFile: path) }
        if let which = state.foreignNamespace { throw .foreignNamespace(stateFile: path, which: which) }
        var remaining = state
        let routing = try HostRouting(resuming: state.steps) { steps in
            remaining.steps = steps
            do throws(HostError) { try remaining.save(to: path) } catch { Log.warning("\(error)", "host") }
        }
        let failures = routing.undo()
        remove(path: path)
        return failures
    }

    // MARK: /proc

    static func processStartTime(_ pid: Int32) -> UInt64? { processStat(pid)?.start }

    /// The state letter (field 3: R, S, Z...) and start time (field 22) of `/proc/PID/stat`.
    static func processStat(_ pid: Int32) -> (state: Character, start: UInt64)? {
        guard let bytes = try? FileIO.read("/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        // The command name (field 2) is in parentheses and may hold spaces; fields after it are plain.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let state = fields[0].first, let start = UInt64(fields[19]) else { return nil }
        return (state, start)
    }

    static func namespaceInode(_ kind: String) -> UInt64 {
        var info = stat()
        guard stat("/proc/self/ns/\(kind)", &info) == 0 else { return 0 }
        return UInt64(info.st_ino)
    }
}
