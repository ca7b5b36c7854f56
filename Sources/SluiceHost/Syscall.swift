import Glibc

/// An `errno` value caught right after a failing call, with its `strerror` text and symbolic name.
/// Internal: the public errors carry the raw `Int32` and render it through `Errno.describe`.
struct Errno: Error, Equatable, Sendable {
    let code: Int32

    /// The value of `errno` now; call immediately after the failing call.
    static var current: Errno { Errno(code: errno) }

    /// `Operation not permitted (EPERM)`.
    static func describe(_ code: Int32) -> String {
        "\(String(cString: strerror(code))) (\(name(code)))"
    }

    /// The symbolic name, such as `EPERM`; `errno 123` for values outside the table.
    static func name(_ code: Int32) -> String {
        switch code {
        case EPERM: return "EPERM"
        case ENOENT: return "ENOENT"
        case ESRCH: return "ESRCH"
        case EINTR: return "EINTR"
        case EIO: return "EIO"
        case ENXIO: return "ENXIO"
        case E2BIG: return "E2BIG"
        case EBADF: return "EBADF"
        case EAGAIN: return "EAGAIN"
        case ENOMEM: return "ENOMEM"
        case EACCES: return "EACCES"
        case EFAULT: return "EFAULT"
        case EBUSY: return "EBUSY"
        case EEXIST: return "EEXIST"
        case ENODEV: return "ENODEV"
        case ENOTDIR: return "ENOTDIR"
        case EINVAL: return "EINVAL"
        case ENFILE: return "ENFILE"
        case EMFILE: return "EMFILE"
        case ENOTTY: return "ENOTTY"
        case ENOSPC: return "ENOSPC"
        case ERANGE: return "ERANGE"
        case ENAMETOOLONG: return "ENAMETOOLONG"
        case ENOSYS: return "ENOSYS"
        case ENOBUFS: return "ENOBUFS"
        case ENOTSOCK: return "ENOTSOCK"
        case EMSGSIZE: return "EMSGSIZE"
        case ENOPROTOOPT: return "ENOPROTOOPT"
        case EPROTONOSUPPORT: return "EPROTONOSUPPORT"
        case EOPNOTSUPP: return "EOPNOTSUPP"
        case EAFNOSUPPORT: return "EAFNOSUPPORT"
        case EADDRINUSE: return "EADDRINUSE"
        case EADDRNOTAVAIL: return "EADDRNOTAVAIL"
        case ENETDOWN: return "ENETDOWN"
        case ENETUNREACH: return "ENETUNREACH"
        case EHOSTUNREACH: return "EHOSTUNREACH"
        case ETIMEDOUT: return "ETIMEDOUT"
        case ECONNREFUSED: return "ECONNREFUSED"
        case EPROTO: return "EPROTO"
        case EBADMSG: return "EBADMSG"
        default: return "errno \(code)"
        }
    }
}

/// What a non-blocking call produced: a byte count, or nothing because it would have blocked.
enum NonBlocking<Value: Equatable & Sendable>: Equatable, Sendable {
    case done(Value)
    case wouldBlock
}

/// The one place Sluice's host code makes system calls that report failure as `-1` plus `errno`:
/// retries `EINTR`, and throws the `Errno` of any other failure for the caller to put in context.
@inline(__always)
func syscall<T: FixedWidthInteger>(_ body: () -> T) throws(Errno) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let error = Errno.current
        if error.code != EINTR { throw error }
    }
}

/// `syscall` for non-blocking descriptors: `EAGAIN` (and `EWOULDBLOCK`, the same value on Linux)
/// becomes `.wouldBlock` instead of an error.
@inline(__always)
func syscallNonBlocking<T: FixedWidthInteger & Sendable>(_ body: () -> T) throws(Errno) -> NonBlocking<T> {
    do throws(Errno) {
        return .done(try syscall(body))
    } catch where error.code == EAGAIN || error.code == EWOULDBLOCK {
        return .wouldBlock
    }
}
