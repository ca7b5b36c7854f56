import Glibc
import Synchronization

/// A TAI64N timestamp as Sluice's message 1 carries it (docs/protocol.md §1): 12 bytes, the TAI64
/// label (Unix seconds + 2^62) as a big-endian u64, then nanoseconds as a big-endian u32.
///
/// Like WireGuard, the label is taken from the Unix clock without the TAI−UTC leap-second offset:
/// the relay only ever compares timestamps of one client with each other, so the offset cancels.
/// Ordering is the byte order of the encoding, which is what replay protection compares.
public struct Tai64N: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The encoded size.
    public static let byteCount = 12
    /// TAI64's offset of the Unix epoch.
    static let epochLabel: UInt64 = 1 << 62

    /// The TAI64 label: Unix seconds + 2^62.
    public let label: UInt64
    /// Nanoseconds within the second (0..<10^9 for clock-made values; decoded values are not checked,
    /// since ordering works on any value).
    public let nanoseconds: UInt32

    /// A timestamp from its two wire fields.
    public init(label: UInt64, nanoseconds: UInt32) {
        self.label = label
        self.nanoseconds = nanoseconds
    }

    /// A timestamp for a Unix time.
    public init(unixSeconds: UInt64, nanoseconds: UInt32) {
        self.init(label: Self.epochLabel &+ unixSeconds, nanoseconds: nanoseconds)
    }

    /// Decodes the 12-byte wire form; nil for any other length.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        var label: UInt64 = 0
        var nanos: UInt32 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { label = label << 8 | UInt64(byte) } else { nanos = nanos << 8 | UInt32(byte) }
        }
        self.init(label: label, nanoseconds: nanos)
    }

    /// The 12-byte wire form.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.byteCount)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: label >> UInt64(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: nanoseconds >> UInt32(shift))) }
        return out
    }

    /// The wall clock now (`CLOCK_REALTIME`). Use `next()` for handshakes.
    public static func now() -> Tai64N {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Tai64N(unixSeconds: UInt64(max(0, ts.tv_sec)), nanoseconds: UInt32(ts.tv_nsec))
    }

    /// The newest timestamp handed out by `next()` in this process.
    private static let lastIssued = Mutex(Tai64N(label: 0, nanoseconds: 0))

    /// The current time, or one nanosecond after the previous result if the clock has not moved past
    /// it (coarse clocks, the clock stepping back, two carriers opened at once). Two handshakes from
    /// one process therefore never carry equal timestamps, so the relay's strictly-newer rule cannot
    /// reject the second of two carriers opened back to back. Thread-safe.
    public static func next() -> Tai64N {
        let clock = now()
        return lastIssued.withLock { last in
            let issued = clock > last ? clock : last.successor
            last = issued
            return issued
        }
    }

    /// One nanosecond later.
    var successor: Tai64N {
        nanoseconds >= 999_999_999
            ? Tai64N(label: label &+ 1, nanoseconds: 0)
            : Tai64N(label: label, nanoseconds: nanoseconds + 1)
    }

    public static func < (a: Tai64N, b: Tai64N) -> Bool {
        (a.label, a.nanoseconds) < (b.label, b.nanoseconds)
    }

    /// Unix seconds and nanoseconds, e.g. `@1700000000.000000123`, for log lines.
    public var description: String {
        let seconds = label >= Self.epochLabel ? String(label - Self.epochLabel) : "-\(Self.epochLabel - label)"
        let nanos = String(nanoseconds)
        return "@\(seconds).\(String(repeating: "0", count: max(0, 9 - nanos.count)))\(nanos)"
    }
}
