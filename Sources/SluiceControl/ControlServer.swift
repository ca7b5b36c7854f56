import Glibc
import SluiceLog
import SluiceLoop
import SluiceSystem

/// A control socket: a Unix stream socket, mode 0600 (root only), on which a command sends one
/// `ControlRequest` line and reads one `ControlReply` line. Requests are small and answered at once,
/// so each connection is served to the end on the loop thread, with a one-second timeout against a
/// stuck peer.
///
/// Thread rule: created and used on its loop's thread.
public final class ControlServer {
    public let path: String
    private let fd: Int32
    private unowned let loop: EventLoop
    private let handler: (ControlRequest) -> ControlReply
    /// The socket file's identity, so that `shutdown` removes only its own file, never one a
    /// successor put at the same path.
    private var file: (device: UInt64, inode: UInt64)?

    /// `<runtime directory>/<tun>.sock`: a tunnel's socket.
    public static func path(forTunnel tun: String) -> String { RuntimeDirectory.path + "/\(tun).sock" }

    /// `<runtime directory>/relay-<port>.sock`: a relay's default socket.
    public static func path(forRelayPort port: UInt16) -> String { RuntimeDirectory.path + "/relay-\(port).sock" }

    /// Listens on `path`, replacing a socket file left there (the caller made sure no live owner
    /// uses it), creating its directory if needed.
    public init(path: String, loop: EventLoop, handler: @escaping (ControlRequest) -> ControlReply) throws(ControlError) {
        self.path = path
        self.loop = loop
        self.handler = handler
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            let directory = String(path[..<slash])
            if mkdir(directory, 0o755) != 0 && errno != EEXIST { throw .listen(path: path, operation: "mkdir \(directory)", errno: errno) }
        }
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .listen(path: path, operation: "socket(AF_UNIX)", errno: errno) }
        unlink(path)
        let old = umask(0o177)  // the socket file is created 0600
        let bound = UnixAddress.with(path) { bind(fd, $0, $1) }
        let bindErrno = errno
        umask(old)
        guard bound == 0, listen(fd, 16) == 0 else {
            let e = bound == 0 ? errno : bindErrno
            Glibc.close(fd)
            throw .listen(path: path, operation: bound == 0 ? "listen" : "bind", errno: e)
        }
        file = Self.identity(of: path)
        do {
            try loop.register(fd: fd, events: [.readable]) { [unowned self] _ in self.acceptAll() }
        } catch {
            Glibc.close(fd)
            unlink(path)
            throw .listen(path: path, operation: "register with the event loop", errno: error.code)
        }
    }

    /// Stops listening and removes the socket file (if it is still this server's).
    public func shutdown() {
        loop.deregister(fd: fd)
        Glibc.close(fd)
        if let file, let now = Self.identity(of: path), now == file { unlink(path) }
    }

    private static func identity(of path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    private func acceptAll() {
        while true {
            let conn = accept(fd, nil, nil)
            guard conn >= 0 else { return }
            _ = fcntl(conn, F_SETFD, FD_CLOEXEC)
            _ = fcntl(conn, F_SETFL, 0)  // blocking, with the timeouts below
            serve(conn)
            Glibc.close(conn)
        }
    }

    private func serve(_ conn: Int32) {
        ControlChannel.setTimeouts(conn, seconds: 1)
        guard let line = ControlChannel.readLine(conn) else { return }
        let reply = ControlRequest(line: line).map(handler) ?? .error("unknown request \"\(line.prefix(40))\"")
        Log.debug("control: \(line) → \(reply.line.prefix(80))", "control")
        ControlChannel.writeAll(conn, reply.line)
    }
}

/// Reading and writing one line on a blocking control connection, for both ends.
enum ControlChannel {
    /// Reads up to a newline (not included); nil when nothing came. Replies carry a status
    /// document, so the limit is generous.
    static func readLine(_ fd: Int32, limit: Int = 4 << 20) -> String? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            // Take up to and including the newline, if it is in what was peeked.
            let end = chunk[0..<n].firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? n
            let taken = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, end, 0) }
            guard taken > 0 else { return nil }
            bytes.append(contentsOf: chunk[0..<taken])
            if bytes.last == UInt8(ascii: "\n") {
                bytes.removeLast()
                break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @discardableResult
    static func writeAll(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    static func setTimeouts(_ fd: Int32, seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
}

/// A `sockaddr_un` for a path, for both ends.
enum UnixAddress {
    static func with<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
