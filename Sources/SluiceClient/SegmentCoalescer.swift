import Glibc
import SluiceWire

/// Output toward a TUN with IFF_VNET_HDR: consecutive TCP segments of one flow that lwIP emits in a
/// loop turn are joined into one GSO "super-packet" and written with one syscall; the kernel splits it
/// again (TSO). Everything else is written alone with an empty vnet header. Stack thread only.
///
/// Segments join when they continue the pending one exactly: same addresses and ports, the next
/// sequence number, the same TCP header length, only ACK/PSH (and FIN on the last) set, at most
/// 64 KiB in all. The GSO size is the first segment's payload, at most what one packet of the TUN's
/// MTU carries; when it is smaller, every segment before must be that full size. lwIP's segments may
/// be larger than one MTU (`TCPStack` with `largeSegments`): the kernel cuts them at the GSO size, so
/// one such segment alone is a GSO write too. The joined packet carries the last segment's ACK number,
/// window, PSH and FIN; its TCP checksum field holds the pseudo-header sum for the kernel to complete.
final class SegmentCoalescer {
    private var buffer = [UInt8](repeating: 0, count: VirtioNetHeader.length + 65535)
    /// Bytes of the pending packet in `buffer` after the header (0: nothing pending).
    private var pendingLength = 0
    private var segments = 0
    private var segmentSize = 0
    private var nextSequence: UInt32 = 0
    private var ipHeaderLength = 0
    private var tcpHeaderLength = 0
    private var isIPv6 = false
    private var pendingFIN = false
    private let mtu: Int
    private let write: (UnsafeRawBufferPointer) -> Bool
    private(set) var writes = 0
    private(set) var failures = 0

    /// - Parameters:
    ///   - mtu: the TUN's MTU: no segment the kernel cuts from a GSO write is longer.
    ///   - write: writes one whole buffer (vnet header + packet) to the TUN; false on failure.
    init(mtu: Int = 1500, write: @escaping (UnsafeRawBufferPointer) -> Bool) {
        self.mtu = mtu
        self.write = write
    }

    /// One IP packet toward the application.
    func emit(_ packet: UnsafeRawBufferPointer) {
        if pendingLength > 0 && tryAppend(packet) { return }
        flush()
        if !startPending(packet) { writeAlone(packet) }
    }

    /// Writes the pending packet. Call at the end of every loop turn and before unrelated output.
    func flush() {
        guard pendingLength > 0 else { return }
        defer {
            pendingLength = 0
            segments = 0
        }
        buffer.withUnsafeMutableBytes { raw in
            let packet = UnsafeMutableRawBufferPointer(rebasing: raw[VirtioNetHeader.length..<VirtioNetHeader.length + pendingLength])
            var header = VirtioNetHeader()
            if segments > 1 || pendingLength - ipHeaderLength - tcpHeaderLength > segmentSize {
                finishSuperPacket(packet)
                header.flags = VirtioNetHeader.needsChecksum
                header.gsoType = isIPv6 ? VirtioNetHeader.gsoTCPv6 : VirtioNetHeader.gsoTCPv4
                header.headerLength = UInt16(ipHeaderLength + tcpHeaderLength)
                header.gsoSize = UInt16(segmentSize)
                header.checksumStart = UInt16(ipHeaderLength)
                header.checksumOffset = 16
            }
            header.write(into: raw)
            record(write(UnsafeRawBufferPointer(rebasing: raw[0..<VirtioNetHeader.length + pendingLength])))
        }
    }

    // MARK: joining

    /// Takes `packet` as the start of a super-packet if it is a plain TCP data segment.
    private func startPending(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard let s = Segment(packet), s.payloadLength > 0, s.joinable, packet.count <= 65535 else { return false }
        buffer.withUnsafeMutableBytes { raw in
            UnsafeMutableRawBufferPointer(rebasing: raw[VirtioNetHeader.length..<VirtioNetHeader.length + packet.count]).copyMemory(from: packet)
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
        guard !pendingFIN, let s = Segment(packet), s.joinable, s.payloadLength > 0,
              s.isIPv6 == isIPv6, s.ipHeaderLength == ipHeaderLength, s.tcpHeaderLength == tcpHeaderLength,
              s.sequence == nextSequence, pendingLength + s.payloadLength <= 65535 else { return false }
        let pendingPayload = pendingLength - ipHeaderLength - tcpHeaderLength
        if segmentSize < mtu - ipHeaderLength - tcpHeaderLength {
            // A GSO size below one MTU's worth is the first segment's length: later segments may not
            // be longer, and a short one before ends the super-packet.
            guard s.payloadLength <= segmentSize, pendingPayload == segments * segmentSize else { return false }
        }
        let sameFlow = buffer.withUnsafeBytes { raw -> Bool in
            let pending = UnsafeRawBufferPointer(rebasing: raw[VirtioNetHeader.length...])
            // Addresses (IPv4 12..<20, IPv6 8..<40) and ports must match.
            let addresses = isIPv6 ? 8..<40 : 12..<20
            return memcmp(pending.baseAddress! + addresses.lowerBound, packet.baseAddress! + addresses.lowerBound, addresses.count) == 0
                && memcmp(pending.baseAddress! + ipHeaderLength, packet.baseAddress! + ipHeaderLength, 4) == 0
        }
        guard sameFlow else { return false }
        buffer.withUnsafeMutableBytes { raw in
            let base = VirtioNetHeader.length
            // The newest ACK number and window (bytes 8..<16 of the TCP header), and PSH if set.
            let tcp = base + ipHeaderLength
            UnsafeMutableRawBufferPointer(rebasing: raw[tcp + 8..<tcp + 16])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[ipHeaderLength + 8..<ipHeaderLength + 16]))
            raw[tcp + 13] |= packet[ipHeaderLength + 13] & 0x09  // PSH, FIN
            let payloadStart = ipHeaderLength + tcpHeaderLength
            UnsafeMutableRawBufferPointer(rebasing: raw[base + pendingLength..<base + pendingLength + s.payloadLength])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: packet[payloadStart..<payloadStart + s.payloadLength]))
        }
        pendingLength += s.payloadLength
        segments += 1
        pendingFIN = s.fin
        nextSequence = s.sequence &+ UInt32(s.payloadLength)
        return true
    }

    /// Lengths and checksums of the joined packet: IP length fields for the whole, the IPv4 header
    /// checksum, and the TCP checksum field as the (uncomplemented) pseudo-header sum over the whole
    /// TCP length, which is what the kernel expects with NEEDS_CSUM.
    private func finishSuperPacket(_ packet: UnsafeMutableRawBufferPointer) {
        let l4Length = pendingLength - ipHeaderLength
        let source: IPAddress, destination: IPAddress
        if isIPv6 {
            packet.storeBytes(of: UInt16(l4Length).bigEndian, toByteOffset: 4, as: UInt16.self)
            source = IPAddress(v6In: UnsafeRawBufferPointer(packet), at: 8)
            destination = IPAddress(v6In: UnsafeRawBufferPointer(packet), at: 24)
        } else {
            packet.storeBytes(of: UInt16(pendingLength).bigEndian, toByteOffset: 2, as: UInt16.self)
            packet.storeBytes(of: UInt16(0), toByteOffset: 10, as: UInt16.self)
            let headerSum = Checksum.sum(UnsafeRawBufferPointer(rebasing: packet[0..<ipHeaderLength]))
            packet.storeBytes(of: Checksum.complement(headerSum).bigEndian, toByteOffset: 10, as: UInt16.self)
            source = IPAddress(v4In: UnsafeRawBufferPointer(packet), at: 12)
            destination = IPAddress(v4In: UnsafeRawBufferPointer(packet), at: 16)
        }
        let pseudo = Checksum.pseudoHeaderSum(source: source, destination: destination, protocol: .tcp, length: l4Length)
        packet.storeBytes(of: pseudo.bigEndian, toByteOffset: ipHeaderLength + 16, as: UInt16.self)
    }

    /// Writes `packet` behind an empty vnet header, through `buffer` (free: called only with nothing
    /// pending). A copy of at most one MTU costs less than the two arrays a `writev` took per packet.
    private func writeAlone(_ packet: UnsafeRawBufferPointer) {
        guard packet.count <= buffer.count - VirtioNetHeader.length else {
            record(false)
            return
        }
        buffer.withUnsafeMutableBytes { raw in
            VirtioNetHeader().write(into: raw)
            UnsafeMutableRawBufferPointer(rebasing: raw[VirtioNetHeader.length..<VirtioNetHeader.length + packet.count])
                .copyMemory(from: packet)
            record(write(UnsafeRawBufferPointer(rebasing: raw[0..<VirtioNetHeader.length + packet.count])))
        }
    }

    private func record(_ ok: Bool) {
        writes += 1
        if !ok { failures += 1 }
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
