import Glibc
import SluiceHost
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceTunnel
import SluiceWire

/// A Linux TUN device as the engine's `PacketFlow`.
///
/// Opened with IFF_VNET_HDR and TUNSETOFFLOAD(CSUM | TSO4 | TSO6), one read brings up to 64 KiB of
/// one TCP flow and one write takes as much, instead of one syscall per 1,500-byte packet — the
/// packet path's main cost (Benchmarks/README.md). Each packet then carries a `VirtioNetHeader`,
/// which lives in the batch slot's headroom and maps to `PacketOffload` both ways, without a copy.
/// Without offloads (an old kernel, a TUN that refuses them) it moves one plain packet per call.
///
/// The fd is level-triggered on the loop: while packets wait, the loop reports it every turn.
final class TunPacketFlow: GatheringPacketFlow {
    /// TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 (linux/if_tun.h).
    static let offloadFlags: UInt32 = 0x01 | 0x02 | 0x04

    let tun: TunDevice
    let format: PacketFlowFormat
    private let vnet: Bool
    /// `unowned`, not `weak`: a weak reference gives the loop a side table, and from then on every
    /// `unowned` reference to it — the engine's, the carriers', the UDP path's, several per packet —
    /// takes the Swift runtime's slow path (EventLoop.schedule says more). The loop outlives the flow.
    private unowned var loop: EventLoop?
    /// A gathered write's virtio-net header and iovecs, allocated once (the engine gathers at most
    /// `SegmentCoalescer.maximumGatheredSegments` payloads behind the headers).
    private let vnetHeader = UnsafeMutableRawBufferPointer.allocate(byteCount: VirtioNetHeader.length, alignment: 8)
    private static let gatherCapacity = 128
    private let gather = UnsafeMutablePointer<iovec>.allocate(capacity: TunPacketFlow.gatherCapacity)

    /// Opens the TUN `name` with offloads when `offloads` asks and the kernel takes them; otherwise
    /// without, logging why.
    init(name: String, mtu: Int, offloads: Bool) throws(HostError) {
        if offloads {
            let tun = try TunDevice(name: name, options: TunDevice.Options(vnetHeader: true))
            do {
                try tun.setOffloads(Self.offloadFlags)
                self.tun = tun
                vnet = true
                format = PacketFlowFormat(batchSize: 1, maximumPacketLength: 65_535, headroom: VirtioNetHeader.length,
                                          offloads: [.checksum, .tcpSegmentation])
                return
            } catch {
                Log.warning("\(error); continuing without TUN offloads (slower)", "client")
            }
        }
        // The first device (if any) is released before the plain one opens the same name.
        tun = try TunDevice(name: name)
        vnet = false
        format = PacketFlowFormat(batchSize: 1, maximumPacketLength: max(mtu, 1280))
    }

    deinit {
        vnetHeader.deallocate()
        gather.deallocate()
    }

    func start(on loop: EventLoop, readable: @escaping () -> Void) throws(PacketFlowError) {
        do {
            try loop.register(fd: tun.fd, events: [.readable]) { _ in readable() }
        } catch {
            throw PacketFlowError("TUN \(tun.name): \(error)")
        }
        self.loop = loop
    }

    func readPackets(into batch: PacketBatch) throws(PacketFlowError) {
        while let slot = batch.nextSlot {
            let n: Int
            do {
                guard case .done(let count) = try tun.read(into: slot) else { return }
                n = count
            } catch {
                throw PacketFlowError("\(error)")
            }
            guard vnet else {
                batch.commit(length: n)
                continue
            }
            guard n > VirtioNetHeader.length else { continue }
            let header = VirtioNetHeader(UnsafeRawBufferPointer(slot))
            var offload = PacketOffload.none
            if header.needsChecksumCompletion {
                offload.partialChecksum = .init(start: Int(header.checksumStart), fieldOffset: Int(header.checksumOffset))
            }
            if header.gsoType != VirtioNetHeader.gsoNone { offload.tcpSegmentSize = Int(header.gsoSize) }
            batch.commit(length: n - VirtioNetHeader.length, offload: offload)
        }
    }

    func writePackets(_ batch: PacketBatch) throws(PacketFlowError) -> Int {
        var written = 0
        for i in 0..<batch.count {
            if vnet { Self.header(for: batch.offload(i), packet: batch.packet(i)).write(into: batch.headroom(i)) }
            let frame = vnet ? batch.framed(i) : batch.packet(i)
            guard case .done = (try? tun.write(UnsafeRawBufferPointer(frame))) ?? .wouldBlock else { continue }
            written += 1
        }
        return written
    }

    /// One packet from pieces with `writev`: its virtio-net header, then the pieces (a super-packet's
    /// headers and each segment's payload where lwIP holds it).
    func writePacket(gathering pieces: UnsafeBufferPointer<UnsafeRawBufferPointer>, offload: PacketOffload) throws(PacketFlowError) -> Bool {
        guard vnet, let first = pieces.first, pieces.count < Self.gatherCapacity else { return false }
        Self.header(for: offload, packet: UnsafeMutableRawBufferPointer(mutating: first)).write(into: vnetHeader)
        gather[0] = iovec(iov_base: vnetHeader.baseAddress, iov_len: vnetHeader.count)
        for (i, piece) in pieces.enumerated() {
            gather[i + 1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: piece.baseAddress), iov_len: piece.count)
        }
        guard case .done = (try? tun.write(gathering: gather, count: pieces.count + 1)) ?? .wouldBlock else { return false }
        return true
    }

    func stop() {
        loop?.deregister(fd: tun.fd)
        loop = nil
    }

    /// The vnet header of an outgoing packet: a super-packet asks the kernel to cut it into
    /// `tcpSegmentSize` segments (TSO) and to finish its checksum; a whole packet gets none.
    static func header(for offload: PacketOffload, packet: UnsafeMutableRawBufferPointer) -> VirtioNetHeader {
        var header = VirtioNetHeader()
        guard let partial = offload.partialChecksum else { return header }
        header.flags = VirtioNetHeader.needsChecksum
        header.checksumStart = UInt16(partial.start)
        header.checksumOffset = UInt16(partial.fieldOffset)
        if let size = offload.tcpSegmentSize {
            let isIPv6 = packet.first.map { $0 >> 4 } == 6
            header.gsoType = isIPv6 ? VirtioNetHeader.gsoTCPv6 : VirtioNetHeader.gsoTCPv4
            header.gsoSize = UInt16(size)
            // IP and TCP headers: the TCP data offset sits in byte 12 of the TCP header.
            header.headerLength = UInt16(partial.start + Int(packet[partial.start + 12] >> 4) * 4)
        }
        return header
    }
}
