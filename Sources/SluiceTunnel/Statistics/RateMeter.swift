/// Payload rates over the last seconds: one sample of the byte totals a second, the rate between
/// the newest sample and the oldest kept. Loop-confined.
final class RateMeter {
    /// Samples kept: rates average over up to this many seconds.
    static let window = 5
    private var samples: [(at: UInt64, up: Int, down: Int)] = []

    /// Records the totals at `now` (milliseconds); keeps the last `window` + 1 samples.
    func sample(at now: UInt64, up: Int, down: Int) {
        samples.append((now, up, down))
        if samples.count > Self.window + 1 { samples.removeFirst(samples.count - Self.window - 1) }
    }

    /// Bytes per second each way between the oldest kept sample and the totals now.
    func rates(at now: UInt64, up: Int, down: Int) -> TunnelStatistics.Rates {
        guard let oldest = samples.first, now > oldest.at else { return .init(bytesPerSecondUp: 0, bytesPerSecondDown: 0, seconds: 0) }
        let seconds = Double(now - oldest.at) / 1000
        return .init(bytesPerSecondUp: Double(up - oldest.up) / seconds, bytesPerSecondDown: Double(down - oldest.down) / seconds,
                     seconds: seconds)
    }
}
