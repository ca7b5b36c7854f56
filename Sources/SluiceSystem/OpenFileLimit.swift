import Glibc

/// The process's limit on open file descriptors (`RLIMIT_NOFILE`). The relay holds one descriptor
/// per stream and UDP association, and distributions start processes with a soft limit of 1,024:
/// raising it to the hard limit, as the kernel lets any process do, is what lets 10,000 streams in.
public enum OpenFileLimit {
    /// The soft and hard limits now.
    public static func current() -> (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (0, 0) }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one; returns the limit in force afterwards.
    @discardableResult
    public static func raiseToHard() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }
}
