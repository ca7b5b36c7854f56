import Glibc
import Synchronization

/// Log severity, most severe first. `--log-level` takes these names.
public enum LogLevel: Int, Sendable, CaseIterable, Comparable {
    case error = 0, warning, info, debug, trace

    public init?(name: String) {
        switch name.lowercased() {
        case "error": self = .error
        case "warning", "warn": self = .warning
        case "info": self = .info
        case "debug": self = .debug
        case "trace": self = .trace
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .error: return "error"
        case .warning: return "warning"
        case .info: return "info"
        case .debug: return "debug"
        case .trace: return "trace"
        }
    }

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

/// Line-oriented logging to stderr. Each line is one `write(2)`, so lines from different threads never
/// interleave. Info level carries lifecycle events only (carrier up/down, handshake failures, refused
/// streams); per-packet detail belongs to debug and trace.
public enum Log {
    private static let threshold = Atomic<Int>(LogLevel.info.rawValue)

    /// The most verbose level that is written.
    public static var level: LogLevel {
        get { LogLevel(rawValue: threshold.load(ordering: .relaxed)) ?? .info }
        set { threshold.store(newValue.rawValue, ordering: .relaxed) }
    }

    @inline(__always)
    public static func enabled(_ level: LogLevel) -> Bool { level.rawValue <= threshold.load(ordering: .relaxed) }

    public static func error(_ message: @autoclosure () -> String, _ component: StaticString = "sluice") { emit(.error, component, message) }
    public static func warning(_ message: @autoclosure () -> String, _ component: StaticString = "sluice") { emit(.warning, component, message) }
    public static func info(_ message: @autoclosure () -> String, _ component: StaticString = "sluice") { emit(.info, component, message) }
    public static func debug(_ message: @autoclosure () -> String, _ component: StaticString = "sluice") { emit(.debug, component, message) }
    public static func trace(_ message: @autoclosure () -> String, _ component: StaticString = "sluice") { emit(.trace, component, message) }

    private static func emit(_ level: LogLevel, _ component: StaticString, _ message: () -> String) {
        guard enabled(level) else { return }
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var tm = tm()
        var seconds = ts.tv_sec
        gmtime_r(&seconds, &tm)
        let stamp = pad(Int(tm.tm_hour)) + ":" + pad(Int(tm.tm_min)) + ":" + pad(Int(tm.tm_sec)) + "." + pad(Int(ts.tv_nsec / 1_000_000), 3)
        let line = "\(stamp) \(level.name) \(component): \(message())\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buf in
            var off = 0
            while off < buf.count {
                let n = write(2, buf.baseAddress! + off, buf.count - off)
                if n < 0 { if errno == EINTR { continue } else { return } }
                off += n
            }
        }
    }

    private static func pad(_ v: Int, _ width: Int = 2) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
