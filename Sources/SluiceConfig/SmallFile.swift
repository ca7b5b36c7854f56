import Glibc

/// Reads a small file (a key, a JSON config) whole, with the OS's own words when that fails.
///
/// Goes through `open`/`fstat`/`read` rather than Foundation so that the failure reason is the `errno`
/// text a person recognises ("No such file or directory"), so that a key file's mode is known before
/// its bytes are read, and so that a key is read into one buffer its reader can wipe.
enum SmallFile {
    /// Why a file could not be read, as text for the middle of a sentence.
    struct Failure: Error {
        let reason: String
    }

    /// An open file descriptor and its `fstat`; closed when dropped (unless it was borrowed).
    struct Open: ~Copyable {
        let fd: Int32
        /// Permission bits (`st_mode & 0o7777`).
        let permissions: UInt32
        /// Whether it is a regular file (not a pipe, terminal or device).
        let isRegular: Bool
        private let owned: Bool

        /// Opens `path` read-only.
        init(path: String) throws(Failure) {
            let fd = retryingEINTR { open(path, O_RDONLY | O_CLOEXEC) }
            guard fd >= 0 else { throw Failure(reason: errnoText()) }
            try self.init(fd: fd, owned: true)
        }

        /// Uses an already open descriptor (standard input), which stays open.
        init(borrowing fd: Int32) throws(Failure) {
            try self.init(fd: fd, owned: false)
        }

        private init(fd: Int32, owned: Bool) throws(Failure) {
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                let failure = Failure(reason: errnoText())
                if owned { close(fd) }
                throw failure
            }
            self.fd = fd
            self.owned = owned
            permissions = info.st_mode & 0o7777
            isRegular = info.st_mode & S_IFMT == S_IFREG
        }

        /// Reads to end of file into a growing array; refuses a file longer than `limit` bytes.
        func readToEnd(limit: Int) throws(Failure) -> [UInt8] {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = chunk.withUnsafeMutableBytes { buf in retryingEINTR { Glibc.read(fd, buf.baseAddress, buf.count) } }
                if n < 0 { throw Failure(reason: errnoText()) }
                if n == 0 { break }
                bytes += chunk[0..<n]
                if bytes.count > limit { throw Failure(reason: "larger than \(limit) bytes, which is too large for this file") }
            }
            return bytes
        }

        deinit {
            if owned { close(fd) }
        }

        /// Reads to end of file into `buffer` and returns the byte count; refuses (with `limit` in
        /// the reason) a file longer than `buffer.count - 1` bytes. Nothing is copied elsewhere.
        func readAll(into buffer: UnsafeMutableRawBufferPointer) throws(Failure) -> Int {
            var count = 0
            while true {
                let n = retryingEINTR { Glibc.read(fd, buffer.baseAddress! + count, buffer.count - count) }
                if n < 0 { throw Failure(reason: errnoText()) }
                if n == 0 { return count }
                count += n
                if count == buffer.count {
                    throw Failure(reason: "larger than \(buffer.count - 1) bytes, which is too large for this file")
                }
            }
        }
    }

    /// Reads all of `path`; refuses files longer than `limit` bytes. For files that hold no secret:
    /// the array grows as it reads, leaving earlier copies in freed memory.
    static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        try Open(path: path).readToEnd(limit: limit)
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
