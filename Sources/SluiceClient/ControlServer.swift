import Glibc
import SluiceHost
import SluiceLog
import SluiceLoop

/// The control socket of a running `sluice up`: a Unix stream socket at `/run/sluice/<tun>.sock`,
/// mode 0600 (root only), on which `sluice exec` and `sluice cgroup` send one `ControlRequest` line
/// and read one `ControlReply` line. Requests are tiny and answered at once, so each connection is
/// served to the end on the loop thread (with a one-second read timeout against a stuck peer).
///
/// Thread rule: created and used on the client's loop thread.
final class ControlServer {
    let path: String
    private let fd: Int32
    private let loop: EventLoop
    private let handler: (ControlRequest) -> ControlReply

    /// `/run/sluice/<tun>.sock`.
    static func path(for tun: String) -> String { HostState.directory + "/\(tun).sock" }

    init(tun: String, loop: EventLoop, handler: @escaping (ControlRequest) -> ControlReply) throws(HostError) {
        path = Self.path(for: tun)
        self.loop = loop
        self.handler = handler
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .cgroup(operation: "socket(AF_UNIX) for", path: path, errno: errno) }
        unlink(path)  // a crashed up's socket; HostSetup has made sure no live up owns this tunnel
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        let old = umask(0o177)  // the socket file is created 0600
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        let bindErrno = errno
        umask(old)
        guard bound == 0, listen(fd, 16) == 0 else {
            let e = bound == 0 ? errno : bindErrno
            Glibc.close(fd)
            throw .cgroup(operation: "bind control socket", path: path, errno: e)
        }
        do {
            try loop.register(fd: fd, events: [.readable]) { [unowned self] _ in self.acceptAll() }
        } catch {
            Glibc.close(fd)
            unlink(path)
            throw .cgroup(operation: "register control socket (\(error))", path: path, errno: EIO)
        }
    }

    func shutdown() {
        loop.deregister(fd: fd)
        Glibc.close(fd)
        unlink(path)
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
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let line = ControlChannel.readLine(conn) else { return }
        let reply = ControlRequest(line: line).map(handler) ?? .error("unknown request \"\(line.prefix(40))\"")
        Log.debug("control: \(line) → \(reply.line.dropLast())", "apps")
        ControlChannel.writeAll(conn, reply.line)
    }
}

/// Reading and writing one line on a blocking control connection, for both ends.
enum ControlChannel {
    static func readLine(_ fd: Int32, limit: Int = 4096) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < limit {
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { break }
            bytes.append(byte)
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
}
