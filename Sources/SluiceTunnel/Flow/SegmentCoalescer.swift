import Glibc
import SluiceWire

/// Output toward a packet flow with TCP segmentation offload: consecutive TCP segments of one flow
/// that lwIP emits in a loop turn are joined into one "super-packet" that the flow's other end cuts
/// again (a Linux TUN: the kernel's TSO/GSO), one write instead of one per segment. Everything else
/// goes out alone. Loop-confined.
///
/// Segments join when they continue the pending one exactly: same addresses and ports, the next
/// sequence number, the same TCP header length, only ACK/PSH (and FIN on the last) set, at most
/// 64 KiB in all. The segment size is the first segment's payload, at most what one packet of the
/// MTU carries; when it is smaller, every segment before must be that full size. lwIP's segments
/// may be larger than one MTU (`TCPStack` with `largeSegments`): the flow cuts them at the segment
/// size, so one such segment alone is a super-packet too. The joined packet carries the last
/// segment's ACK number, window, PSH and FIN; its TCP checksum field holds the pseudo-header sum
/// (a partial checksum) for the other end to complete.
///
/// Where the flow writes from pieces (`GatheringPacketFlow`) and lwIP's buffers can be held
/// (`holder`), a run is gathered: the first segment's headers are copied into a small buffer of the
/// coalescer's and updated there, the payloads stay in lwIP's buffers, held until the write at the
/// end of the turn; nothing is copied in user space. Otherwise the pending super-packet is built in
/// place in the output batch's next slot (`PacketOutput`), so each segment is copied once, from
/// lwIP's buffer into the slot the flow writes from. That copy was 5 % of a download client's CPU
/// (`Benchmarks/e2e/reqcpu.py --test iperf-down --perf`, `SegmentCoalescer.emit` under memmove).
final class SegmentCoalescer {
    /// Bytes of the pending packet, built in the output's next slot or gathered (0: nothing pending).
    private var pendingLength = 0
    private var pending: UnsafeMutableRawBufferPointer?
    private var segments = 0
    private var segmentSize = 0
    private var nextSequence: UInt32 = 0
    private var ipHeaderLength = 0
    private var tcpHeaderLength = 0
    private var isIPv6 = false
    private var pendingFIN = false
    private let mtu: Int
    /// `unowned(unsafe)`: the output owns the coalescer, which never outlives it; a checked
    /// reference took a retain and a release on every segment.
    private unowned(unsafe) let output: PacketOutput
    /// Every TCP segment with data leaves with a partial checksum, a lone one too: lwIP did not sum
    /// the bytes it copied (`TCPStack.leavesDataChecksums`), so the checksum it wrote is wrong.
    private let everyDataSegmentPartial: Bool
    /// Super-packets committed (runs of more than one segment, or one segment longer than an MTU).
    private(set) var superPackets = 0

    /// Holds lwIP's buffers for gathered runs; nil (the default) builds every run in a batch slot.
    /// Set only where the output writes gathered packets. `unowned(unsafe)`: the engine owns both,
    /// and a checked reference cost a retain and a release around every hold and release.
    unowned(unsafe) var holder: OutputPacketHolder?
    /// Whether the pending run is gathered: headers in `headers`, payloads in `pieces[1...]`.
    private var gathered = false
    /// The gathered run's IP and TCP headers (at most 60 + 60 bytes).
    private let headers = UnsafeMutableRawBufferPointer.allocate(byteCount: 128, alignment: 16)
    /// The gathered run's pieces: `headers`' used part first, then each segment's payload.
    private var pieces: [UnsafeRawBufferPointer] = []
    /// The held buffers of the gathered run, released after its write.
    private var held: [UnsafeMutableRawPointer] = []
    /// Segments per gathered run at most (the flow's iovec count is bounded, `IOV_MAX` is 1,024).
    static let maximumGatheredSegments = 64

    /// - Parameters:
    ///   - mtu: the flow's MTU: no segment cut from a super-packet is longer.
    ///   - output: where packets go; the coalescer fills its next slot in place.
    ///   - everyDataSegmentPartial: see the property.
    init(mtu: Int, output: PacketOutput, everyDataSegmentPartial: Bool = false) {
        self.mtu = mtu
        self.output = output
        self.everyDataSegmentPartial = everyDataSegmentPartial
        pieces.reserveCapacity(Self.maximumGatheredSegments + 1)
        held.reserveCapacity(Self.maximumGatheredSegments)
    }

    deinit { headers.deallocate() }

    /// One IP packet toward the application.
    func emit(_ packet: UnsafeRawBufferPointer) {
        if pendingLength > 0 && tryAppend(packet) { return }
        flush()
        if startPending(packet) { return }
        if everyDataSegmentPartial, let s = Segment(packet), s.payloadLength > 0 {
            // A data segment that joins nothing (flags a run does not take): alone, but partial too.
            let copy = UnsafeMutableRawBufferPointer(rebasing: output.reserve()[0..<packet.count])
            copy.copyMemory(from: packet)
            Self.writePseudoHeaderSum(copy, ipHeaderLength: s.ipHeaderLength, isIPv6: s.isIPv6, totalLength: packet.count)
            output.commitReserved(length: packet.count, offload: PacketOffload(partialChecksum: .init(start: s.ipHeaderLength, fieldOffset: 16)))
            return
        }
        output.appendWhole(packet)
    }

    /// Commits the pending packet to the output batch. Called at the end of every loop turn and
    /// before unrelated output.
    func flush() {
        guard pendingLength > 0, let raw = pending else { return }
        defer {
            pendingLength = 0
            segments = 0
            pending = nil
            gathered = false
        }
        // The headers, and in a slot the whole packet, are updated in place.
        let header = UnsafeMutableRawBufferPointer(rebasing: raw[0..<(gathered ? ipHeaderLength + tcpHeaderLength : pendingLength)])
        var offload = PacketOffload.none
        if segments > 1 || pendingLength - ipHeaderLength - tcpHeaderLength > segmentSize {
            finishSuperPacket(header)
            offload = PacketOffload(tcpSegmentSize: segmentSize,
                                    partialChecksum: .init(start: ipHeaderLength, fieldOffset: 16))
            superPackets += 1
        } else if everyDataSegmentPartial {
            Self.writePseudoHeaderSum(header, ipHeaderLength: ipHeaderLength, isIPv6: isIPv6, totalLength: pendingLength)
            offload = PacketOffload(partialChecksum: .init(start: ipHeaderLength, fieldOffset: 16))
        }
        guard gathered else {
            output.commitReserved(length: pendingLength, offload: offload)
            return
        }
        pieces[0] = UnsafeRawBufferPointer(header)
        pieces.withUnsafeBufferPointer { output.writeGathered($0, length: pendingLength, offload: offload) }
        if let holder { for token in held { holder.releaseHeldOutput(token) } }
        held.removeAll(keepingCapacity: true)
        pieces.removeAll(keepingCapacity: true)
    }

    // MARK: joining

    /// Takes `packet` as the start of a super-packet if it is a plain TCP data segment.
    private func startPending(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard let s = Segment(packet), s.payloadLength > 0, s.joinable, packet.count <= 65535 else { return false }
        if let token = holder?.holdCurrentOutput() {
            let headerLength = s.ipHeaderLength + s.tcpHeaderLength
            UnsafeMutableRawBufferPointer(rebasing: headers[0..<headerLength]).copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[0..<headerLength]))
            pieces.append(UnsafeRawBufferPointer(rebasing: headers[0..<headerLength]))  // replaced by the final headers at flush
            pieces.append(UnsafeRawBufferPointer(rebasing: packet[headerLength...]))
            held.append(token)
            gathered = true
            pending = headers
        } else {
            let raw = output.reserve()
            UnsafeMutableRawBufferPointer(rebasing: raw[0..<packet.count]).copyMemory(from: packet)
            pending = raw
        }
        pendingLength = packet.count
        segments = 1
        segmentSize = min(s.payloadLength, mtu - s.ipHeaderLength - s.tcpHeaderLength)
        nextSequence = s.sequence &+ UInt32(s.payloadLength)
        ipHeaderLength = s.ipHeaderLength
        tcpHeaderLength = s.tcpHeaderLength
        isIPv6 = s.isIPv6
        pendingFIN = s.fin
        return true
    }

    private func tryAppend(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard let raw = pending, !pendingFIN, let s = Segment(packet), s.joinable, s.payloadLength > 0,
              s.isIPv6 == isIPv6, s.ipHeaderLength == ipHeaderLength, s.tcpHeaderLength == tcpHeaderLength,
              s.sequence == nextSequence, pendingLength + s.payloadLength <= (gathered ? 65535 : min(65535, raw.count)),
              !gathered || segments < Self.maximumGatheredSegments else { return false }
        let pendingPayload = pendingLength - ipHeaderLength - tcpHeaderLength
        if segmentSize < mtu - ipHeaderLength - tcpHeaderLength {
            // A segment size below one MTU's worth is the first segment's length: later segments may
            // not be longer, and a short one before ends the super-packet.
            guard s.payloadLength <= segmentSize, pendingPayload == segments * segmentSize else { return false }
        }
        // Addresses (IPv4 12..<20, IPv6 8..<40) and ports must match.
        let addresses = isIPv6 ? 8..<40 : 12..<20
        guard memcmp(raw.baseAddress! + addresses.lowerBound, packet.baseAddress! + addresses.lowerBound, addresses.count) == 0,
              memcmp(raw.baseAddress! + ipHeaderLength, packet.baseAddress! + ipHeaderLength, 4) == 0 else { return false }
        // A gathered run takes only segments whose buffer it can hold.
        let token = gathered ? holder?.holdCurrentOutput() : nil
        if gathered && token == nil { return false }
        // The newest ACK number and window (bytes 8..<16 of the TCP header), and PSH/FIN if set.
        let tcp = ipHeaderLength
        UnsafeMutableRawBufferPointer(rebasing: raw[tcp + 8..<tcp + 16])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[ipHeaderLength + 8..<ipHeaderLength + 16]))
        raw[tcp + 13] |= packet[ipHeaderLength + 13] & 0x09
        let payloadStart = ipHeaderLength + tcpHeaderLength
        let payload = UnsafeRawBufferPointer(rebasing: packet[payloadStart..<payloadStart + s.payloadLength])
        if let token {
            pieces.append(payload)
            held.append(token)
        } else {
            UnsafeMutableRawBufferPointer(rebasing: raw[pendingLength..<pendingLength + s.payloadLength]).copyMemory(from: payload)
        }
        pendingLength += s.payloadLength
        segments += 1
        pendingFIN = s.fin
        nextSequence = s.sequence &+ UInt32(s.payloadLength)
        return true
    }

    /// Lengths and checksums of the joined packet, written into its headers (`packet` starts with
    /// them): IP length fields for the whole, the IPv4 header checksum, and the TCP checksum field as
    /// the (uncomplemented) pseudo-header sum over the whole TCP length, which is what the kernel
    /// expects with NEEDS_CSUM.
    private func finishSuperPacket(_ packet: UnsafeMutableRawBufferPointer) {
        if isIPv6 {
            packet.storeBytes(of: UInt16(pendingLength - ipHeaderLength).bigEndian, toByteOffset: 4, as: UInt16.self)
        } else {
            packet.storeBytes(of: UInt16(pendingLength).bigEndian, toByteOffset: 2, as: UInt16.self)
            packet.storeBytes(of: UInt16(0), toByteOffset: 10, as: UInt16.self)
            let headerSum = Checksum.sum(UnsafeRawBufferPointer(rebasing: packet[0..<ipHeaderLength]))
            packet.storeBytes(of: Checksum.complement(headerSum).bigEndian, toByteOffset: 10, as: UInt16.self)
        }
        Self.writePseudoHeaderSum(packet, ipHeaderLength: ipHeaderLength, isIPv6: isIPv6, totalLength: pendingLength)
    }

    /// The TCP checksum field of a packet of `totalLength` bytes whose headers `packet` starts with
    /// (its IP lengths right) as a partial checksum: the uncomplemented pseudo-header sum over its TCP
    /// length, for the other end to complete.
    private static func writePseudoHeaderSum(_ packet: UnsafeMutableRawBufferPointer, ipHeaderLength: Int, isIPv6: Bool,
                                             totalLength: Int) {
        let bytes = UnsafeRawBufferPointer(packet)
        let source = isIPv6 ? IPAddress(v6In: bytes, at: 8) : IPAddress(v4In: bytes, at: 12)
        let destination = isIPv6 ? IPAddress(v6In: bytes, at: 24) : IPAddress(v4In: bytes, at: 16)
        let pseudo = Checksum.pseudoHeaderSum(source: source, destination: destination, protocol: .tcp, length: totalLength - ipHeaderLength)
        packet.storeBytes(of: pseudo.bigEndian, toByteOffset: ipHeaderLength + 16, as: UInt16.self)
    }

    /// The few fields of an outgoing TCP segment the joining rules look at.
    private struct Segment {
        let isIPv6: Bool
        let ipHeaderLength: Int
        let tcpHeaderLength: Int
        let sequence: UInt32
        let payloadLength: Int
        /// Only ACK, PSH and FIN among SYN/FIN/RST/URG/ACK/PSH (ECE/CWR also end a run).
        let joinable: Bool
        let fin: Bool

        init?(_ p: UnsafeRawBufferPointer) {
            guard let first = p.first else { return nil }
            let ipLength: Int, proto: UInt8, total: Int
            switch first >> 4 {
            case 4:
                guard p.count >= 20 else { return nil }
                ipLength = Int(first & 0x0F) * 4
                proto = p[9]
                total = Int(UInt16(p[2]) << 8 | UInt16(p[3]))
                isIPv6 = false
                // Fragments never join.
                guard p[6] & 0x3F == 0 && p[7] == 0 else { return nil }
            case 6:
                guard p.count >= 40 else { return nil }
                ipLength = 40
                proto = p[6]
                total = 40 + Int(UInt16(p[4]) << 8 | UInt16(p[5]))
                isIPv6 = true
            default:
                return nil
            }
            guard proto == 6, total == p.count, ipLength + 20 <= total else { return nil }
            let tcpLength = Int(p[ipLength + 12] >> 4) * 4
            guard tcpLength >= 20, ipLength + tcpLength <= total else { return nil }
            ipHeaderLength = ipLength
            tcpHeaderLength = tcpLength
            sequence = UInt32(p[ipLength + 4]) << 24 | UInt32(p[ipLength + 5]) << 16 | UInt32(p[ipLength + 6]) << 8 | UInt32(p[ipLength + 7])
            payloadLength = total - ipLength - tcpLength
            joinable = p[ipLength + 13] & ~UInt8(0x19) == 0
            fin = p[ipLength + 13] & 0x01 != 0
        }
    }
}
