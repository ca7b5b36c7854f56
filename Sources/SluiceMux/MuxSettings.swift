/// Tunables of a session; the defaults are those of docs/protocol.md.
public struct MuxSettings: Sendable {
    /// Receive window granted to the peer for each stream.
    public var streamWindow = 512 * 1024
    /// Largest window a bulk stream's receive window grows to (`ReceiveWindowTuning`).
    public var maxStreamWindow = 2 * 1024 * 1024
    /// Bytes all streams of one carrier may be granted together beyond their announced windows.
    public var windowGrowthBudget = 8 * 1024 * 1024
    /// Bytes the session may have encoded but not yet written to the carrier socket.
    public var carrierBudget = 1024 * 1024
    /// Largest DATA payload per frame.
    public var maxDataFrame = 32 * 1024
    /// Feature bits this end supports (docs/protocol.md §1.1): a relay advertises them in handshake
    /// message 2, a client offers them in HELLO.
    public var features = CarrierFeatures.implemented
    /// How long a frame that no one waits on (`MuxSessionDelegate.sessionNeedsDeferredFlush`) stays
    /// in the record when nothing else is written. The loop's timers count whole milliseconds, so 1
    /// holds it from a fraction of a millisecond to a little over one; any flush before then takes it.
    public var deferredFlushMilliseconds: UInt64 = 1

    public init() {}
}
