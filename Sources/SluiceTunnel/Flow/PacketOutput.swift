import SluiceLog

/// Every packet the engine sends toward the applications passes through here: lwIP's segments,
/// UDP replies, ICMP errors and echo replies. Packets gather in one `PacketBatch` that goes to the
/// flow when it is full and at the end of every loop turn; with segmentation offload, runs of TCP
/// segments are joined first (`SegmentCoalescer`). Loop-confined.
final class PacketOutput {
    struct Counters {
        /// Packets and bytes the flow took.
        var packets = 0
        var bytes = 0
        /// Packets the flow refused or failed to write.
        var writeFailures = 0
        /// Packets longer than the flow takes.
        var tooLong = 0
    }

    private let flow: PacketFlow
    /// The flow, where it writes packets from pieces: super-packets are then gathered.
    private let gatheringFlow: GatheringPacketFlow?
    private let batch: PacketBatch
    /// Joins TCP segments when the flow takes super-packets; nil otherwise.
    private(set) var coalescer: SegmentCoalescer?
    private(set) var counters = Counters()
    private var loggedFailure = false

    /// Whether every TCP data segment leaves with a partial checksum (the coalescer marks lone ones
    /// too), so that lwIP need not sum what it copies (`TCPStack.leavesDataChecksums`).
    let marksDataChecksumsPartial: Bool

    /// - Parameter marksDataChecksumsPartial: asked for, and the flow has segmentation offload
    ///   (so it completes partial checksums): the engine asks where lwIP's checksum is Sluice's.
    init(flow: PacketFlow, mtu: Int, marksDataChecksumsPartial: Bool = false) {
        self.flow = flow
        gatheringFlow = flow as? GatheringPacketFlow
        batch = PacketBatch(format: flow.format)
        let offloads = flow.format.offloads
        self.marksDataChecksumsPartial = marksDataChecksumsPartial && offloads.contains(.tcpSegmentation) && offloads.contains(.checksum)
        if offloads.contains(.tcpSegmentation) {
            coalescer = SegmentCoalescer(mtu: mtu, output: self, everyDataSegmentPartial: self.marksDataChecksumsPartial)
        }
    }

    /// Whether lwIP may make segments longer than one MTU: the flow cuts super-packets itself.
    var takesSuperPackets: Bool { coalescer != nil }

    /// Holds the buffers of emitted segments (the engine's lwIP stack), so that runs of them are
    /// written gathered, without copies, where the flow takes packets in pieces; ignored otherwise.
    var packetHolder: OutputPacketHolder? {
        get { coalescer?.holder }
        set { if gatheringFlow != nil { coalescer?.holder = newValue } }
    }

    /// One IP packet toward the application.
    func emit(_ packet: UnsafeRawBufferPointer) {
        if let coalescer { coalescer.emit(packet) } else { appendWhole(packet) }
    }

    /// Sends what waits: the pending super-packet and the batch. At the end of every loop turn.
    func flush() {
        coalescer?.flush()
        write()
    }

    // MARK: used by SegmentCoalescer

    /// Copies one whole packet into the batch (no offload).
    func appendWhole(_ packet: UnsafeRawBufferPointer) {
        if batch.isFull { write() }
        if !batch.append(packet) { counters.tooLong += 1 }
    }

    /// The next slot's packet area, to be filled in place and then committed with `commitReserved`.
    func reserve() -> UnsafeMutableRawBufferPointer {
        if batch.isFull { write() }
        return batch.nextPacketArea!
    }

    func commitReserved(length: Int, offload: PacketOffload) {
        batch.commit(length: length, offload: offload)
    }

    /// Writes one packet of `length` bytes from `pieces` (only with a gathering flow), after what
    /// the batch holds, so that packets leave in the order they were emitted.
    func writeGathered(_ pieces: UnsafeBufferPointer<UnsafeRawBufferPointer>, length: Int, offload: PacketOffload) {
        guard let gatheringFlow else { preconditionFailure("gathered output without a gathering flow") }
        write()
        do {
            if try gatheringFlow.writePacket(gathering: pieces, offload: offload) {
                counters.packets += 1
                counters.bytes += length
            } else {
                counters.writeFailures += 1
            }
        } catch {
            counters.writeFailures += 1
            logFailure(error)
        }
    }

    private func write() {
        guard !batch.isEmpty else { return }
        let count = batch.count
        do {
            let written = try flow.writePackets(batch)
            counters.packets += written
            for i in 0..<written { counters.bytes += batch.packet(i).count }
            counters.writeFailures += count - written
        } catch {
            counters.writeFailures += count
            logFailure(error)
        }
        batch.removeAll()
    }

    private func logFailure(_ error: PacketFlowError) {
        guard !loggedFailure else { return }
        loggedFailure = true
        Log.warning("writing packets toward the applications failed: \(error); counting further failures", "tunnel")
    }
}
