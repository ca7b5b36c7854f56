import Glibc

/// A failed system call: which operation, on what, and the errno. Renders as
/// `open(/dev/net/tun): Operation not permitted (EPERM)`, plus a hint when one is known.
public struct SystemError: Error, CustomStringConvertible, Sendable, Equatable {
    public let operation: String
    public let code: Int32
    public let hint: String?

    public init(_ operation: String, code: Int32 = errno, hint: String? = nil) {
        self.operation = operation
        self.code = code
        self.hint = hint
    }

    public var description: String {
        let base = "\(operation): \(SystemError.describe(code))"
        return hint.map { "\(base) — \($0)" } ?? base
    }

    /// `Operation not permitted (EPERM)`: the text and symbolic name of `code`.
    public static func describe(_ code: Int32) -> String { "\(message(code)) (\(name(code)))" }

    /// strerror text of `code`.
    public static func message(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(validatingCString: text) ?? "error \(code)"
    }

    /// Symbolic name of the errno values a user of a network tool meets.
    public static func name(_ code: Int32) -> String {
        switch code {
        case EPERM: return "EPERM"
        case ENOENT: return "ENOENT"
        case EINTR: return "EINTR"
        case EIO: return "EIO"
        case EBADF: return "EBADF"
        case EAGAIN: return "EAGAIN"
        case ENOMEM: return "ENOMEM"
        case EACCES: return "EACCES"
        case EBUSY: return "EBUSY"
        case EEXIST: return "EEXIST"
        case ENODEV: return "ENODEV"
        case EINVAL: return "EINVAL"
        case EMFILE: return "EMFILE"
        case ENFILE: return "ENFILE"
        case ENOSPC: return "ENOSPC"
        case EPIPE: return "EPIPE"
        case EADDRINUSE: return "EADDRINUSE"
        case EADDRNOTAVAIL: return "EADDRNOTAVAIL"
        case ENETDOWN: return "ENETDOWN"
        case ENETUNREACH: return "ENETUNREACH"
        case ECONNABORTED: return "ECONNABORTED"
        case ECONNRESET: return "ECONNRESET"
        case ENOBUFS: return "ENOBUFS"
        case ENOTCONN: return "ENOTCONN"
        case ETIMEDOUT: return "ETIMEDOUT"
        case ECONNREFUSED: return "ECONNREFUSED"
        case EHOSTUNREACH: return "EHOSTUNREACH"
        case EHOSTDOWN: return "EHOSTDOWN"
        case EINPROGRESS: return "EINPROGRESS"
        case EAFNOSUPPORT: return "EAFNOSUPPORT"
        case EPROTONOSUPPORT: return "EPROTONOSUPPORT"
        case EOPNOTSUPP: return "EOPNOTSUPP"
        case ESRCH: return "ESRCH"
        case E2BIG: return "E2BIG"
        case EBADMSG: return "EBADMSG"
        case EFAULT: return "EFAULT"
        case EMSGSIZE: return "EMSGSIZE"
        case ENAMETOOLONG: return "ENAMETOOLONG"
        case ENOPROTOOPT: return "ENOPROTOOPT"
        case ENOSYS: return "ENOSYS"
        case ENOTDIR: return "ENOTDIR"
        case ENOTSOCK: return "ENOTSOCK"
        case ENOTTY: return "ENOTTY"
        case ENXIO: return "ENXIO"
        case EPROTO: return "EPROTO"
        case ERANGE: return "ERANGE"
        default: return "errno \(code)"
        }
    }
}
