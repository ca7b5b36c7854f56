import Glibc

/// Reads a small file (a key, a JSON config) whole, with the OS's own words when that fails.
///
/// Goes through `open`/`fstat`/`read` rather than Foundation so that the failure reason is the `errno`
/// text a person recognises ("No such file or directory"), and so that the file's mode is known for the
/// key-permission warning.
enum SmallFile {
    /// A file's bytes and what `fstat` said about it.
    struct Contents {
        let bytes: [UInt8]
        /// Permission bits (`st_mode & 0o7777`).
        let permissions: UInt32
        /// Whether it is a regular file (not a pipe, terminal or device).
        let isRegular: Bool
    }

    /// Why a file could not be read, as text for the middle of a sentence.
    struct Failure: Error {
        let reason: String
    }

    /// Reads all of `path`; refuses files longer than `limit` bytes.
    static func read(_ path: String, limit: Int) throws(Failure) -> Contents {
        let fd = retryingEINTR { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw Failure(reason: errnoText()) }
        defer { close(fd) }

        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure(reason: errnoText()) }

        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { buf in retryingEINTR { Glibc.read(fd, buf.baseAddress, buf.count) } }
            if n < 0 { throw Failure(reason: errnoText()) }
            if n == 0 { break }
            bytes += chunk[0..<n]
            if bytes.count > limit { throw Failure(reason: "larger than \(limit) bytes, which is too large for this file") }
        }
        return Contents(bytes: bytes, permissions: info.st_mode & 0o7777, isRegular: info.st_mode & S_IFMT == S_IFREG)
    }

    private static func retryingEINTR<T: BinaryInteger>(_ call: () -> T) -> T {
        while true {
            let result = call()
            if result < 0 && errno == EINTR { continue }
            return result
        }
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
