import Glibc

/// Milliseconds and nanoseconds on CLOCK_MONOTONIC: timers and timeouts never follow wall-clock jumps.
public enum MonotonicClock {
    @inline(__always)
    public static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    @inline(__always)
    public static func milliseconds() -> UInt64 { nanoseconds() / 1_000_000 }
}

/// Unix time on CLOCK_REALTIME, for what people read (when a handshake happened), never for timers.
public enum WallClock {
    /// Seconds since 1970, with fractions.
    public static func seconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
