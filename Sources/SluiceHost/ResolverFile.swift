import Glibc
import SluiceSystem
import SluiceWire

/// Points the host's resolver configuration (`/etc/resolv.conf`) at Sluice's resolvers while the
/// tunnel is up, and puts back the exact original afterwards.
///
/// - A regular file is rewritten in place (same inode, mode and owner; this also works when the
///   file is a bind mount, as in containers), and its bytes are saved to `backupPath` first.
/// - A symbolic link (systemd-resolved's `stub-resolv.conf`, resolvconf's) is replaced by a regular
///   file through a rename, and put back as the same link.
/// - No file at all: one is created, and removed again.
///
/// On the way down Sluice restores only if the file still holds exactly what it wrote; if something
/// else (a DHCP client, NetworkManager) rewrote it meanwhile, it is left alone and the original stays
/// in `backupPath`.
public struct ResolverChange: Hashable, Sendable, CustomStringConvertible {
    public static let defaultPath = "/etc/resolv.conf"
    /// glibc reads at most three `nameserver` lines (`MAXNS`).
    public static let maxNameservers = 3

    public var path: String
    public var backupPath: String
    public var nameservers: [IPAddress]
    /// Who wrote it, for the comment at the top (`tunnel sluice0`).
    public var owner: String

    public init(path: String = ResolverChange.defaultPath, backupPath: String, nameservers: [IPAddress], owner: String) {
        self.path = path
        self.backupPath = backupPath
        self.nameservers = nameservers
        self.owner = owner
    }

    /// The file's text while the tunnel is up.
    public var content: String {
        var text = "# Written by sluice up (\(owner)): DNS goes through the tunnel.\n"
        text += "# The original comes back when the tunnel goes down (or with `sluice down`).\n"
        for server in nameservers.prefix(Self.maxNameservers) { text += "nameserver \(server)\n" }
        return text
    }

    /// The `nameserver` addresses the resolver file at `path` names now; empty when it cannot be read.
    public static func nameservers(inFileAt path: String = defaultPath) -> [IPAddress] {
        guard let bytes = try? FileIO.read(path) else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return words.count >= 2 && words[0] == "nameserver" ? IPAddress(String(words[1])) : nil
        }
    }

    public var description: String {
        "point \(path) at \(nameservers.prefix(Self.maxNameservers).map(\.description).joined(separator: ", "))"
    }
}

/// What undoing a `ResolverChange` needs; kept in the state file.
public struct ResolverBackup: Hashable, Sendable, Codable {
    /// What was at `path` before.
    public enum Original: Hashable, Sendable, Codable {
        /// A regular file, whose bytes are in `backupPath`.
        case file
        /// A symbolic link to `target`.
        case symlink(target: String)
        /// Nothing.
        case absent
    }

    public var path: String
    public var backupPath: String
    public var original: Original
    /// What Sluice wrote, to tell whether someone else changed the file since.
    public var written: String
}

/// The file operations behind `ResolverChange` (`install`) and `ResolverBackup` (`restore`).
enum ResolverFile {
    static func install(_ change: ResolverChange) throws(HostError) -> ResolverBackup {
        let path = change.path
        let original: ResolverBackup.Original
        var info = stat()
        if lstat(path, &info) != 0 {
            let e = errno
            guard e == ENOENT else { throw .resolver(operation: "inspect", path: path, errno: e) }
            original = .absent
        } else if info.st_mode & S_IFMT == S_IFLNK {
            original = .symlink(target: try FileIO.readLink(path))
        } else if info.st_mode & S_IFMT == S_IFREG {
            original = .file
            let bytes = try FileIO.read(path)
            try FileIO.write(change.backupPath, bytes, flags: O_CREAT | O_TRUNC, mode: 0o600)
        } else {
            throw .resolver(operation: "replace (it is neither a file nor a symbolic link)", path: path, errno: EINVAL)
        }
        let backup = ResolverBackup(path: path, backupPath: change.backupPath, original: original, written: change.content)
        do throws(HostError) {
            let bytes = Array(change.content.utf8)
            if case .file = original {
                try FileIO.write(path, bytes, flags: O_TRUNC, mode: 0)
            } else {
                try FileIO.replace(path, with: bytes, mode: 0o644)
            }
        } catch {
            unlink(change.backupPath)
            throw error
        }
        return backup
    }

    static func restore(_ backup: ResolverBackup) throws(HostError) {
        let path = backup.path
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              (try? FileIO.read(path)) == Array(backup.written.utf8)
        else {
            throw .resolverChangedMeanwhile(path: path, backup: backup.original == .file ? backup.backupPath : "the state file")
        }
        switch backup.original {
        case .file:
            let bytes: [UInt8]
            do throws(HostError) {
                bytes = try FileIO.read(backup.backupPath)
            } catch {
                throw .stateFile(path: backup.backupPath, problem: "the saved original of \(path) cannot be read: \(error)")
            }
            try FileIO.write(path, bytes, flags: O_TRUNC, mode: 0)
            unlink(backup.backupPath)
        case .symlink(let target):
            let temporary = path + ".sluice-restore"
            unlink(temporary)
            guard symlink(target, temporary) == 0 else { throw .resolver(operation: "recreate the symbolic link", path: path, errno: errno) }
            guard rename(temporary, path) == 0 else {
                let e = errno
                unlink(temporary)
                throw .resolver(operation: "put back the symbolic link", path: path, errno: e)
            }
        case .absent:
            guard unlink(path) == 0 || errno == ENOENT else { throw .resolver(operation: "remove", path: path, errno: errno) }
        }
    }
}

/// Whole-file reads and writes with errors as `HostError.resolver` (the files here are small).
enum FileIO {
    static func read(_ path: String) throws(HostError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .resolver(operation: "open", path: path, errno: errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n: Int
            do {
                n = try syscall("read") { chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
            } catch {
                throw .resolver(operation: "read", path: path, errno: error.code)
            }
            if n == 0 { return bytes }
            bytes += chunk[0..<n]
            if bytes.count > 1 << 20 { throw .resolver(operation: "read (larger than 1 MiB)", path: path, errno: EFBIG) }
        }
    }

    /// Opens `path` for writing with `flags` (`O_TRUNC`, `O_CREAT`...), writes all of `bytes`, fsyncs.
    static func write(_ path: String, _ bytes: [UInt8], flags: Int32, mode: mode_t) throws(HostError) {
        let fd = open(path, O_WRONLY | O_CLOEXEC | flags, mode)
        guard fd >= 0 else { throw .resolver(operation: "open for writing", path: path, errno: errno) }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            do {
                offset += try syscall("write") { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) } }
            } catch {
                throw .resolver(operation: "write", path: path, errno: error.code)
            }
        }
        _ = fsync(fd)
    }

    /// Writes `bytes` to a temporary file next to `path` and renames it over `path` (replacing a
    /// symbolic link rather than writing through it).
    static func replace(_ path: String, with bytes: [UInt8], mode: mode_t) throws(HostError) {
        let temporary = path + ".sluice-new"
        unlink(temporary)  // a leftover of a crash
        try write(temporary, bytes, flags: O_CREAT | O_TRUNC | O_EXCL, mode: mode)
        _ = fchmodat(AT_FDCWD, temporary, mode, 0)  // not narrowed by the umask
        guard rename(temporary, path) == 0 else {
            let e = errno
            unlink(temporary)
            throw .resolver(operation: "replace", path: path, errno: e)
        }
    }

    static func readLink(_ path: String) throws(HostError) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n >= 0 else { throw .resolver(operation: "read the symbolic link", path: path, errno: errno) }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
