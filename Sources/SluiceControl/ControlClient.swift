import Glibc
import SluiceSystem

/// The commands' end of a control socket (`ControlServer`): `sluice exec`, `sluice cgroup`,
/// `sluice status`.
public enum ControlClient {
    /// Sends `request` to the socket at `path` and returns the reply. `what` names the owner for
    /// the error when nothing listens ("tunnel sluice0", "relay").
    public static func send(_ request: ControlRequest, to path: String, what: String, timeoutSeconds: Int = 5) throws(ControlError) -> ControlReply {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .notRunning(what: what, path: path, errno: errno) }
        defer { close(fd) }
        let connected = UnixAddress.with(path) { connect(fd, $0, $1) }
        guard connected == 0 else { throw .notRunning(what: what, path: path, errno: errno) }
        ControlChannel.setTimeouts(fd, seconds: timeoutSeconds)
        guard ControlChannel.writeAll(fd, request.line), let line = ControlChannel.readLine(fd) else { throw .noReply(path: path) }
        guard let reply = ControlReply(line: line) else { throw .notSluice(path: path) }
        return reply
    }

    /// Sends `request` to the `up` of `tun`.
    public static func send(_ request: ControlRequest, tun: String) throws(ControlError) -> ControlReply {
        try send(request, to: ControlServer.path(forTunnel: tun), what: "tunnel \(tun) (start it with `sluice up`)")
    }
}
