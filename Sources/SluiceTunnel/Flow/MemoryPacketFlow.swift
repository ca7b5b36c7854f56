import SluiceLoop
import Synchronization

/// A `PacketFlow` in memory: packets handed to `inject` are what the engine reads; what the engine
/// writes goes to `output` on the loop's thread. The in-memory twin of a TUN device, for tests and
/// for embedding the engine behind a packet source of your own (docs/embedding.md).
///
/// With `offloads` containing `.tcpSegmentation` the engine hands it TCP super-packets (one per run
/// of segments, `PacketOffload.tcpSegmentSize` set, checksum partial); without, every packet is
/// whole with its checksums complete. It takes packets in pieces (`GatheringPacketFlow`) as a TUN
/// does, so engine tests run the gathered output path.
///
/// Thread rule: loop-confined like the engine, except `injector`, which other threads may use.
public final class MemoryPacketFlow: GatheringPacketFlow {
    public let format: PacketFlowFormat
    /// Receives each batch the engine writes, as whole packets with their offload metadata, on the
    /// loop's thread.
    public var output: ([(packet: [UInt8], offload: PacketOffload)]) -> Void = { _ in }
    /// Queues packets for the engine from any thread.
    public let injector = Injector()
    private var readable: (() -> Void)?

    /// - Parameters:
    ///   - mtu: the longest packet without segmentation offload.
    ///   - offloads: `[]`, or `[.checksum, .tcpSegmentation]` for super-packets.
    ///   - batchSize: packets per read and write call.
    public init(mtu: Int = 1500, offloads: PacketOffloads = [], batchSize: Int = 64) {
        format = PacketFlowFormat(batchSize: batchSize, maximumPacketLength: offloads.contains(.tcpSegmentation) ? 65_535 : mtu,
                                  offloads: offloads)
    }

    /// Queues packets for the engine to read. On the loop's thread; from elsewhere use `injector`.
    public func inject(_ packets: [[UInt8]]) { injector.inject(packets) }

    public func start(on loop: EventLoop, readable: @escaping () -> Void) throws(PacketFlowError) {
        self.readable = readable
        injector.attach(LoopBound(self, loop: loop))
    }

    public func readPackets(into batch: PacketBatch) throws(PacketFlowError) {
        for packet in injector.take(upTo: batch.capacity) where packet.count <= batch.maximumPacketLength {
            packet.withUnsafeBytes { _ = batch.append($0) }
        }
    }

    public func writePackets(_ batch: PacketBatch) throws(PacketFlowError) -> Int {
        var written: [(packet: [UInt8], offload: PacketOffload)] = []
        written.reserveCapacity(batch.count)
        for i in 0..<batch.count { written.append((Array(batch.packet(i)), batch.offload(i))) }
        output(written)
        return batch.count
    }

    /// A packet from pieces goes to `output` whole, alone in its batch.
    public func writePacket(gathering pieces: UnsafeBufferPointer<UnsafeRawBufferPointer>, offload: PacketOffload) throws(PacketFlowError) -> Bool {
        var packet: [UInt8] = []
        for piece in pieces { packet.append(contentsOf: piece) }
        output([(packet, offload)])
        return true
    }

    public func stop() {
        readable = nil
        injector.attach(nil)
    }

    /// Calls `readable` while packets wait, as a level-triggered fd would be reported each turn.
    fileprivate func deliver() {
        readable?()
        if readable != nil, injector.hasPackets { injector.wake() }
    }

    /// The thread-safe half of a `MemoryPacketFlow`: the queue of injected packets and the way to
    /// wake the engine's loop.
    public final class Injector: Sendable {
        private struct State {
            var packets: [[UInt8]] = []
            var flow: LoopBound<MemoryPacketFlow>?
            var wakePending = false
        }

        private let state = Mutex(State())

        /// Queues packets for the engine to read and wakes its loop. Callable from any thread.
        public func inject(_ packets: [[UInt8]]) {
            guard !packets.isEmpty else { return }
            state.withLock { $0.packets.append(contentsOf: packets) }
            wake()
        }

        var hasPackets: Bool { state.withLock { !$0.packets.isEmpty } }

        fileprivate func attach(_ flow: LoopBound<MemoryPacketFlow>?) {
            state.withLock { $0.flow = flow }
            if flow != nil { wake() }
        }

        fileprivate func take(upTo limit: Int) -> [[UInt8]] {
            state.withLock { s in
                let n = min(limit, s.packets.count)
                defer { s.packets.removeFirst(n) }
                return Array(s.packets.prefix(n))
            }
        }

        fileprivate func wake() {
            let flow: LoopBound<MemoryPacketFlow>? = state.withLock { s in
                guard let flow = s.flow, !s.packets.isEmpty, !s.wakePending else { return nil }
                s.wakePending = true
                return flow
            }
            flow?.execute { flow in
                flow.injector.state.withLock { $0.wakePending = false }
                flow.deliver()
            }
        }
    }
}
