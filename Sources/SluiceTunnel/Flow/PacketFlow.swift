import SluiceLoop

/// Where the engine's IP packets come from and where its packets go: the seam between the tunnel
/// engine and the host it runs in (wireguard-go's `tun.Device`, Apple's `NEPacketTunnelFlow`).
///
/// On Linux `sluice up` implements it over a TUN device opened with IFF_VNET_HDR (`TunPacketFlow`
/// in SluiceUp); an app's packet-tunnel extension would implement it over its packet flow object;
/// tests use `MemoryPacketFlow`. A flow says in `format` how it is read and written — how many
/// packets a call moves, how long a packet may be, and which offloads it understands — and the
/// engine adapts: with `.tcpSegmentation` it writes one super-packet per run of TCP segments,
/// without it one packet per segment.
///
/// Thread rule: the engine calls every method on its loop's thread, and `readable` must be called
/// on that thread too (from elsewhere, through `loop.handle.execute`).
public protocol PacketFlow: AnyObject {
    /// How packets are batched and which offloads apply; fixed for the life of the flow.
    var format: PacketFlowFormat { get }

    /// Starts delivery: from now on the flow calls `readable` (on `loop`) whenever packets are
    /// waiting, and keeps calling it while they are (a level-triggered TUN fd does so by itself).
    func start(on loop: EventLoop, readable: @escaping () -> Void) throws(PacketFlowError)

    /// Reads waiting packets into `batch` (empty on entry), at most `batch.capacity`, without
    /// blocking; leaves it empty when nothing waits.
    func readPackets(into batch: PacketBatch) throws(PacketFlowError)

    /// Writes every packet of `batch` toward the applications, in order, without blocking; returns
    /// how many the flow took (the engine counts the rest as dropped).
    func writePackets(_ batch: PacketBatch) throws(PacketFlowError) -> Int

    /// Stops delivery; no call to `readable` follows.
    func stop()
}

/// How a `PacketFlow` moves packets.
public struct PacketFlowFormat: Sendable, Equatable {
    /// Packets one `readPackets` or `writePackets` call moves at most.
    public var batchSize: Int
    /// The longest packet read or written (65,535 with segmentation offload; otherwise the MTU).
    public var maximumPacketLength: Int
    /// Bytes before each packet in a batch slot that the flow may use for a header of its own (the
    /// 10-byte virtio-net header of a Linux TUN), so it needs no copy.
    public var headroom: Int
    public var offloads: PacketOffloads

    public init(batchSize: Int, maximumPacketLength: Int, headroom: Int = 0, offloads: PacketOffloads = []) {
        precondition(batchSize > 0 && maximumPacketLength >= 1280 && maximumPacketLength <= 65_535)
        precondition(!offloads.contains(.tcpSegmentation) || offloads.contains(.checksum), "segmentation needs checksum offload")
        self.batchSize = batchSize
        self.maximumPacketLength = maximumPacketLength
        self.headroom = headroom
        self.offloads = offloads
    }
}

/// Offloads a packet flow understands, in both directions (the virtio-net semantics of a Linux TUN
/// with `IFF_VNET_HDR` and `TUNSETOFFLOAD`).
public struct PacketOffloads: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Packets may carry a partial TCP/UDP checksum (`PacketOffload.partialChecksum`): only the
    /// pseudo-header sum in the field, the rest to be summed by whoever holds the whole packet.
    public static let checksum = PacketOffloads(rawValue: 1)
    /// A TCP packet may carry up to 64 KiB of one flow with a segment size: the flow's other end
    /// cuts it into segments (and the flow may hand such packets in).
    public static let tcpSegmentation = PacketOffloads(rawValue: 2)
}

/// Offload metadata of one packet in a `PacketBatch`.
public struct PacketOffload: Sendable, Equatable {
    /// A partial checksum: the 16-bit field at `start + fieldOffset` (offsets from the start of the
    /// IP header) holds the pseudo-header sum; the ones'-complement sum from `start` to the end of
    /// the packet must be added and the result complemented into the field.
    public struct PartialChecksum: Sendable, Equatable {
        public var start: Int
        public var fieldOffset: Int
        public init(start: Int, fieldOffset: Int) {
            self.start = start
            self.fieldOffset = fieldOffset
        }
    }

    /// TCP segmentation of a super-packet: each segment carries at most `tcpSegmentSize` bytes of
    /// payload; nil for a packet to be sent as it is.
    public var tcpSegmentSize: Int?
    public var partialChecksum: PartialChecksum?

    public init(tcpSegmentSize: Int? = nil, partialChecksum: PartialChecksum? = nil) {
        self.tcpSegmentSize = tcpSegmentSize
        self.partialChecksum = partialChecksum
    }

    /// A whole packet with its checksums complete.
    public static let none = PacketOffload()
}

/// A packet flow failed. On the read path such a failure stops the engine (fatal); on the write
/// path it is counted and the packets are dropped.
public struct PacketFlowError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
