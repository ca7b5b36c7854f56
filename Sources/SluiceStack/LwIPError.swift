import CLwIP

/// An lwIP `err_t`, with lwIP's name kept in each case's documentation.
public enum LwIPError: Error, CustomStringConvertible, Sendable {
    /// `ERR_MEM`: lwIP could not allocate (or a send queue is full).
    case outOfMemory
    /// `ERR_CONN`, `ERR_CLSD`, `ERR_RST`, `ERR_ABRT`: the connection is gone.
    case connectionGone(Int8)
    /// Any other `err_t`.
    case other(Int8)
    /// The stack could not be set up (no netif or listener).
    case setupFailed(String)

    init(_ code: err_t) {
        switch code {
        case err_t(ERR_MEM.rawValue): self = .outOfMemory
        case err_t(ERR_CONN.rawValue), err_t(ERR_CLSD.rawValue), err_t(ERR_RST.rawValue), err_t(ERR_ABRT.rawValue):
            self = .connectionGone(code)
        default: self = .other(code)
        }
    }

    public var description: String {
        switch self {
        case .outOfMemory: return "lwIP is out of memory (ERR_MEM)"
        case .connectionGone(let c): return "lwIP connection is gone (err \(c))"
        case .other(let c): return "lwIP error \(c)"
        case .setupFailed(let what): return "could not set up the TCP stack: \(what)"
        }
    }
}
