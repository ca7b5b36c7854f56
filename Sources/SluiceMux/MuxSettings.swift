/// Tunables of a session; the defaults are those of docs/protocol.md.
public struct MuxSettings: Sendable {
    /// Receive window granted to the peer for each stream.
    public var streamWindow = 512 * 1024
    /// Largest window a bulk stream's receive window grows to (`ReceiveWindowTuning`). 4 MiB is about
    /// 5 ms of a 7 Gbit/s download: the relay keeps sending while the client waits that long for a CPU,
    /// as it does on a busy host. Against 2 MiB, `Benchmarks/e2e/ab.py --tests iperf --rounds 4`: one
    /// stream down 1.098× with `--busy-loops 2` (every round faster), four streams down 1.096× without;
    /// the client's peak RSS over the runs 21.7 → 29.7 MiB, the relay's 13.2 → 14.9.
    public var maxStreamWindow = 4 * 1024 * 1024
    /// Bytes all streams of one carrier may be granted together beyond their announced windows.
    public var windowGrowthBudget = 8 * 1024 * 1024
    /// What the carriers given the same pool may be granted together beyond their announced windows,
    /// besides each one's `windowGrowthBudget`; nil: no such cap (a client's carriers: what they
    /// buffer is the client's own memory).
    public var windowGrowthPool: WindowGrowthPool? = nil
    /// Bytes the session may have encoded but not yet written to the carrier socket.
    public var carrierBudget = 1024 * 1024
    /// Largest DATA payload per frame.
    public var maxDataFrame = 32 * 1024
    /// Feature bits this end supports (docs/protocol.md §1.1): a relay advertises them in handshake
    /// message 2, a client offers them in HELLO.
    public var features = CarrierFeatures.implemented
    /// How long a frame that no one waits on (`MuxSessionDelegate.sessionNeedsDeferredFlush`) stays
    /// in the record when nothing else is written: a new UDP socket's OPEN and OPEN_OK, an evicted
    /// association's RESET. The loop's timers count whole milliseconds, so 5 holds it 4 to 5 ms; any
    /// flush before then takes it. New sockets one after another (DNS lookups, the bench's test) then
    /// cost each end a record every few milliseconds instead of every one: with the relay's eviction
    /// RESETs held too (`EvictionPacing`), a new socket's round trip took 120 → 112 µs at one in
    /// flight and 30,255 → 32,811 new sockets/s at sixteen (medians of five rounds,
    /// `Benchmarks/e2e/ab.py --tests udp`, against holding for 1 ms with those RESETs at once). Those
    /// RESETs held with 1 ms gained nothing measurable (116 → 120 µs).
    public var deferredFlushMilliseconds: UInt64 = 5

    public init() {}
}
