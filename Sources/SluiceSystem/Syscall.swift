import Glibc

/// Outcome of a non-blocking system call: done with a value, or would block (`EAGAIN`). The one
/// would-block type of every module: sockets, the TUN, eventfds.
public enum IOResult<Value: Sendable>: Sendable {
    case done(Value)
    case wouldBlock
}

extension IOResult: Equatable where Value: Equatable {}

/// The one wrapper for system calls that return -1 and set `errno` on failure: retries `EINTR` and
/// throws the `SystemError` of any other failure, named by `operation` (evaluated only then).
/// Inlinable, like `syscallRetrying`: see there.
@inlinable @inline(__always)
public func syscall<T: FixedWidthInteger>(_ operation: @autoclosure () -> String, _ body: () -> T) throws(SystemError) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = errno
        if code != EINTR { throw SystemError(operation(), code: code) }
    }
}

/// `syscall` for non-blocking descriptors: `EAGAIN` (`EWOULDBLOCK`, the same on Linux) becomes
/// `.wouldBlock` instead of an error. Every socket, TUN and eventfd call of the data path goes here.
/// Inlinable so that each caller in another module gets it specialised for its integer type: called
/// through the generic entry point, every call paid protocol-witness and value-witness calls for
/// `T`, about 1 % of a download client's CPU (`Benchmarks/e2e/reqcpu.py --test iperf-down --perf`).
@inlinable @inline(__always)
public func syscallRetrying<T: FixedWidthInteger & Sendable>(_ operation: @autoclosure () -> String, _ body: () -> T) throws(SystemError) -> IOResult<T> {
    do throws(SystemError) {
        return .done(try syscall(operation(), body))
    } catch where error.code == EAGAIN || error.code == EWOULDBLOCK {
        return .wouldBlock
    }
}
