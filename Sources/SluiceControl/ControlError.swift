import Glibc
import SluiceSystem

/// Why a control socket could not be served or reached.
public enum ControlError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The socket could not be created, bound or registered (`operation` names which).
    case listen(path: String, operation: String, errno: Int32)
    /// Nothing listens on `path`, or it may not be reached (not root).
    case notRunning(what: String, path: String, errno: Int32)
    /// Something answered on `path`, but not with Sluice's control protocol.
    case notSluice(path: String)
    /// The connection broke or timed out before a reply came.
    case noReply(path: String)

    public var description: String {
        switch self {
        case .listen(let path, let operation, let e):
            return "control socket \(path): \(operation): \(SystemError.describe(e))"
                + (e == EACCES || e == EPERM ? " — run as root, or pick a writable path with --control" : "")
        case .notRunning(let what, let path, let e):
            return "no \(what) is running (cannot reach its control socket \(path): \(SystemError.describe(e)))"
                + (e == EACCES || e == EPERM ? "; the socket is root-only: run with sudo" : "")
        case .notSluice(let path): return "\(path) is not a sluice control socket (it did not answer the control protocol)"
        case .noReply(let path): return "no answer on the control socket \(path)"
        }
    }
}
