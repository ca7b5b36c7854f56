import Glibc

/// What every suite shares: the clock, the timed loop, number formatting, the table and the JSON line.
/// No Foundation: the figures are printed with integer arithmetic.
enum Bench {
    /// CLOCK_MONOTONIC in seconds.
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Seconds each row is timed: 1, or `MICROBENCH_SECONDS` (a short run under valgrind, say).
    static let timedSeconds: Double = {
        guard let text = getenv("MICROBENCH_SECONDS").map({ String(cString: $0) }), let value = Double(text), value > 0 else { return 1.0 }
        return value
    }()

    /// Calls `body` for `warmUp` seconds untimed, then for about `seconds` timed, and returns the units
    /// per second `body` reported (bytes, packets, …). Each call should take well over a microsecond
    /// (loop inside `body` for cheap operations), so the clock read between calls is noise.
    /// `timing` runs once between the warm-up and the timed calls (to note counters' starting values).
    static func rate(seconds: Double = timedSeconds, warmUp: Double = timedSeconds / 5, timing: () -> Void = {},
                     _ body: () -> Int) -> Double {
        let warmUpEnd = now() + warmUp
        while now() < warmUpEnd { _ = body() }
        timing()
        var units = 0
        let start = now()
        var elapsed = 0.0
        repeat {
            units += body()
            elapsed = now() - start
        } while elapsed < seconds
        return Double(units) / elapsed
    }

    /// Keeps the optimiser from dropping a computation whose result is otherwise unused.
    @inline(never) @_optimize(none)
    static func keep<T>(_ value: T) {}

    /// Returns `value` through a call the optimiser cannot see into, so that a pure computation on it
    /// (a checksum of the same bytes) is not hoisted out of the timed loop.
    @inline(never) @_optimize(none)
    static func opaque<T>(_ value: T) -> T { value }

    /// `value` with `decimals` decimals (0...3).
    static func format(_ value: Double, decimals: Int = 2) -> String {
        var scale = 1
        for _ in 0..<decimals { scale *= 10 }
        let scaled = Int((value * Double(scale)).rounded())
        guard decimals > 0 else { return String(scaled) }
        let fraction = String(abs(scaled) % scale)
        let sign = scaled < 0 ? "-" : ""
        return "\(sign)\(abs(scaled) / scale)." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }

    /// Prints a table: the first column left-aligned, the others right-aligned, two spaces apart.
    static func printTable(_ header: [String], _ rows: [[String]]) {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        for row in all {
            var line = ""
            for (column, cell) in row.enumerated() {
                let gap = String(repeating: " ", count: widths[column] - cell.count)
                line += column == 0 ? cell + gap : "  " + gap + cell
            }
            print(line)
        }
    }

    /// One JSON line `{"benchmark":name,"results":[...]}`; each result is a list of key and already
    /// rendered JSON value (a number from `format`, or a string from `quoted`).
    static func printJSON(_ name: String, _ results: [[(String, String)]]) {
        let objects = results.map { fields in "{" + fields.map { "\(quoted($0.0)):\($0.1)" }.joined(separator: ",") + "}" }
        print("{\"benchmark\":\(quoted(name)),\"results\":[\(objects.joined(separator: ","))]}")
    }

    /// A JSON string for the plain labels the suites use (no quotes, backslashes or control characters).
    static func quoted(_ text: String) -> String {
        precondition(!text.contains { $0 == "\"" || $0 == "\\" || $0.isASCII && $0.asciiValue! < 0x20 }, "label needs escaping")
        return "\"" + text + "\""
    }
}
