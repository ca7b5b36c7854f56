import SluiceMux
import SluiceTunnel

/// One way of moving bytes in `sluice bench`.
public enum BenchDirection: String, Sendable, Equatable {
    /// Client to relay: streams to the discard endpoint.
    case up
    /// Relay to client: streams from the chargen endpoint.
    case down

    /// The relay endpoint a stream of this direction opens.
    var service: BenchService { self == .up ? .discard : .chargen }
}

/// Settings of `sluice bench`, resolved from the command line or `up`'s config file.
public struct BenchSettings: Sendable {
    public var target: CarrierTarget
    /// How long each direction sends before its streams are finished.
    public var durationMilliseconds: UInt64
    /// The directions measured, one after the other.
    public var phases: [BenchDirection]
    /// Parallel streams per direction, spread round-robin over the carriers.
    public var streams: Int
    /// Carriers dialled, one after another (as `up` does, so the relay sees handshake timestamps in order).
    public var carriers: Int
    public var mux = MuxSettings()
    /// Time a stream has for OPEN_OK, and after the streams' FIN for the relay's FIN.
    public var answerTimeoutMilliseconds: UInt64 = 10_000

    public init(target: CarrierTarget, durationMilliseconds: UInt64, phases: [BenchDirection], streams: Int, carriers: Int) {
        self.target = target
        self.durationMilliseconds = durationMilliseconds
        self.phases = phases
        self.streams = streams
        self.carriers = carriers
    }
}
