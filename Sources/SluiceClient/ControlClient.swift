import Glibc
import SluiceHost

/// The `sluice exec` / `sluice cgroup` end of the control socket (`ControlServer`).
public enum ControlClient {
    /// Why a request got no answer from `up`.
    public enum Failure: Error, CustomStringConvertible {
        /// No `sluice up` of this tunnel is listening.
        case notUp(tun: String, path: String, errno: Int32)
        /// The connection broke before a reply came.
        case noReply(path: String)

        public var description: String {
            switch self {
            case .notUp(let tun, let path, let e):
                return "no tunnel \(tun) is up (cannot reach its control socket \(path): \(String(cString: strerror(e)))) — start it with `sluice up`"
                    + (e == EACCES || e == EPERM ? "; the socket is root-only: run with sudo" : "")
            case .noReply(let path): return "sluice up did not answer on \(path)"
            }
        }
    }

    /// Sends `request` to the `up` of `tun` and returns its reply.
    public static func send(_ request: ControlRequest, tun: String) throws(Failure) -> ControlReply {
        let path = ControlServer.path(for: tun)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .notUp(tun: tun, path: path, errno: errno) }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw .notUp(tun: tun, path: path, errno: errno) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard ControlChannel.writeAll(fd, request.line), let line = ControlChannel.readLine(fd),
              let reply = ControlReply(line: line) else { throw .noReply(path: path) }
        return reply
    }
}
