import Glibc
import SluiceBase64
import SluiceSystem

/// Writes a private key file for `sluice keygen --output FILE`: the key's base64 and a newline, mode
/// 0600 whatever the umask, synced to disk before it counts as written.
///
/// An existing file is never overwritten unless `replacing` is set (`--force`): a private key that
/// is overwritten is gone for good, and every peer that knew its public key would have to be told.
/// With `replacing`, the key goes to a new file in the same directory that then takes the name in
/// one `rename`, so a crash leaves either the old key or the new one, never half of either, and the
/// old file's looser mode (or its hard links) never applies to the new key.
public enum KeyFileWriter {
    /// Why the key file was not written.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// `path` exists and `replacing` was not set.
        case exists(path: String)
        /// A system call failed.
        case system(SystemError)

        public var description: String {
            switch self {
            case .exists(let path):
                return "\(path) already exists; sluice keygen does not overwrite a key file — remove it first, or add --force to replace it"
            case .system(let error):
                return "\(error)"
            }
        }
    }

    /// Writes the base64 text of `key` and a newline to standard output (`sluice keygen` without
    /// `--output`), from a buffer that is wiped afterwards.
    public static func print(key: UnsafeRawBufferPointer) throws(Failure) {
        if let failure = withLine(key, { writeAll(1, $0, name: "standard output") }) { throw .system(failure) }
    }

    /// Writes the base64 text of `key` to `path` (see the type's comment).
    public static func write(key: UnsafeRawBufferPointer, to path: String, replacing: Bool) throws(Failure) {
        if replacing {
            try writeReplacing(key: key, path: path)
        } else {
            let fd: Int32
            do {
                fd = Int32(try blocking("open(\(path))") {
                    Int(open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600))
                })
            } catch {
                throw error.code == EEXIST ? .exists(path: path) : .system(error)
            }
            do throws(Failure) {
                try fill(fd, key: key, name: path)
            } catch {
                unlink(path)
                throw error
            }
        }
    }

    /// The temporary-file-and-rename path of `write(…replacing: true)`.
    private static func writeReplacing(key: UnsafeRawBufferPointer, path: String) throws(Failure) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        var template = Array((directory + "." + name + ".XXXXXX").utf8CString)
        // mkstemp makes the file with mode 0600 and a name no other process holds.
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard fd >= 0 else { throw .system(SystemError("mkstemp(\(temporary))")) }
        do throws(Failure) {
            try fill(fd, key: key, name: temporary)
            guard rename(temporary, path) == 0 else { throw Failure.system(SystemError("rename(\(temporary), \(path))")) }
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// Sets mode 0600, writes the key's text and a newline, syncs and closes `fd`.
    private static func fill(_ fd: Int32, key: UnsafeRawBufferPointer, name: String) throws(Failure) {
        var failure: SystemError?
        if fchmod(fd, 0o600) != 0 { failure = SystemError("fchmod(\(name), 0600)") }
        if failure == nil { failure = withLine(key) { writeAll(fd, $0, name: name) } }
        if failure == nil, fsync(fd) != 0 { failure = SystemError("fsync(\(name))") }
        if close(fd) != 0, failure == nil { failure = SystemError("close(\(name))") }
        if let failure { throw .system(failure) }
    }

    /// Lets `body` use the key's text and a newline, then wipes it.
    private static func withLine<R>(_ key: UnsafeRawBufferPointer, _ body: ([UInt8]) -> R) -> R {
        Base64.withEncoded(key) { text in
            var line = [UInt8](repeating: 0, count: text.count + 1)
            defer { Secrets.wipe(&line) }
            line.withUnsafeMutableBufferPointer { out in
                _ = out.update(fromContentsOf: text)
                out[text.count] = UInt8(ascii: "\n")
            }
            return body(line)
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], name: String) -> SystemError? {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buf in
                Result { () throws(SystemError) in
                    try blocking("write(\(name))") { Glibc.write(fd, buf.baseAddress! + offset, buf.count - offset) }
                }
            }
            switch written {
            case .success(let n): offset += n
            case .failure(let error): return error
            }
        }
        return nil
    }

    /// `syscallRetrying` for blocking calls on a regular file, where EAGAIN is an error like any other.
    private static func blocking(_ operation: @autoclosure () -> String, _ body: () -> Int) throws(SystemError) -> Int {
        guard case .done(let n) = try syscallRetrying(operation(), body) else { throw SystemError(operation(), code: EAGAIN) }
        return n
    }
}
