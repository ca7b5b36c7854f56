import SluiceLog
import SluiceStack
import SluiceWire

/// Every packet read from the packet flow passes through `dispatch` once: parsed, reassembled if it
/// is a fragment, and handed to lwIP (TCP), the UDP forwarder, or answered (ICMP echo). Loop thread.
extension TunnelEngine {
    /// Packet `index` of the input batch, with the partial checksum it may carry (the local kernel
    /// made it and left its checksum to the device). A TCP segment of that kind goes to lwIP
    /// unverified, its checksum never completed: two passes over every uploaded byte saved
    /// (`SegmentChecksum.locallyMade`). Any other packet's partial checksum is completed first.
    func dispatch(inputPacket index: Int) {
        let packet = input.packet(index)
        let partialChecksum = input.offload(index).partialChecksum
        let bytes = UnsafeRawBufferPointer(packet)
        let summary: PacketSummary
        do {
            summary = try PacketSummary(parsing: bytes)
        } catch {
            if let partialChecksum, !partialChecksum.complete(in: packet) {
                counters.malformed += 1
                return
            }
            unparsed(bytes, error)
            return
        }
        var checksum = SegmentChecksum.verify
        if let partialChecksum {
            if summary.protocol == .tcp, TCPStack.takesUnverifiedSegments, !summary.tcpFlags.contains(.syn),
               partialChecksum.start == summary.transportOffset {
                checksum = .locallyMade
            } else if !partialChecksum.complete(in: packet) {
                counters.malformed += 1
                return
            }
        }
        route(bytes, summary, checksum: checksum, inputPacket: index)
    }

    /// TCP packets from this long on go to lwIP in the memory they were read into (`PacketBatch.take`);
    /// shorter ones (ACKs, MTU-sized segments) are copied. A new 64 KiB slot and the free of the old
    /// one cost what a pbuf and a copy of about 1.5 KiB do (67–79 ns against 64–73 ns in a C loop
    /// on this VM), and an adopted buffer stays allocated as long as lwIP keeps the segment: at
    /// 8 KiB only super-packets are taken, where the copy saved is many times the slot's cost.
    static let smallestAdoptedPacket = 8_192

    /// A whole packet (one the reassembler put together).
    func dispatch(_ packet: UnsafeRawBufferPointer) {
        do {
            route(packet, try PacketSummary(parsing: packet), checksum: .verify)
        } catch {
            unparsed(packet, error)
        }
    }

    /// Hands the packet on by protocol; a large TCP packet that is `inputPacket` of the input batch
    /// is taken out of the batch for lwIP rather than copied.
    private func route(_ packet: UnsafeRawBufferPointer, _ summary: PacketSummary, checksum: SegmentChecksum,
                       inputPacket index: Int? = nil) {
        if summary.destination.address.isLoopback {
            counters.loopback += 1
        } else if summary.protocol == .tcp {
            if let index, packet.count >= Self.smallestAdoptedPacket {
                stack.input(input.take(index), summary: summary, checksum: checksum)
            } else {
                stack.input(packet, summary: summary, checksum: checksum)
            }
        } else {
            udp.input(summary, packet: packet)
        }
    }

    /// A packet `PacketSummary` does not route: a fragment, ICMP, something else.
    private func unparsed(_ packet: UnsafeRawBufferPointer, _ error: WireError) {
        switch error {
        case .fragment:
            if case .reassembled(let whole) = reassembler.feed(packet, now: loop.now) { dispatch(whole) }
        case .unsupportedProtocol(let proto) where proto == .icmp || proto == .icmpv6:
            answerEcho(packet)
        case .unsupportedProtocol:
            counters.unsupportedProtocol += 1
        default:
            counters.malformed += 1
        }
    }

    /// Echo requests to any address are answered here, by the engine (as hev-socks5-tunnel does):
    /// ping through the tunnel shows the packet path works, not that the destination is up. Other
    /// ICMP from applications is dropped and counted.
    private func answerEcho(_ packet: UnsafeRawBufferPointer) {
        guard let icmp = try? ICMPSummary(parsing: packet), icmp.isEchoRequest, !icmp.destination.isLoopback else {
            counters.icmpNotEcho += 1
            return
        }
        let n = scratch.withUnsafeMutableBytes { (try? ICMPEchoReply.emit(answering: packet, into: $0)) ?? 0 }
        guard n > 0 else {
            counters.malformed += 1
            return
        }
        counters.echoReplies += 1
        scratch.withUnsafeBytes { writeFragmented(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }

    /// The resolver a TCP flow to `destination` goes to instead, when DNS redirect is configured
    /// and it is DNS (port 53); see `DNSRedirect`.
    func dnsResolver(for destination: SocketEndpoint, from application: SocketEndpoint) -> SocketEndpoint? {
        guard case .resolver(let resolver) = dnsRedirect.route(flowTo: destination, from: application) else { return nil }
        return resolver
    }

    /// Writes a UDP datagram toward the application, fragmented to the MTU.
    func emitUDP(_ payload: UnsafeRawBufferPointer, from source: SocketEndpoint, to application: SocketEndpoint) {
        nextFragmentID &+= 1
        let id = nextFragmentID
        let length = scratch.withUnsafeMutableBytes {
            (try? UDPPacket.emit(from: source, to: application, payload: payload, identification: UInt16(truncatingIfNeeded: id),
                                 dontFragment: false, into: $0)) ?? 0
        }
        guard length > 0 else {
            counters.udpUnencodable += 1
            return
        }
        scratch.withUnsafeBytes { writeFragmented(UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
    }

    /// Writes a packet the engine made itself (a UDP reply, an echo reply), as fragments when it is
    /// larger than the MTU: as its source, the engine may fragment it (IPv6 included).
    func writeFragmented(_ packet: UnsafeRawBufferPointer) {
        guard packet.count > configuration.mtu else {
            output.emit(packet)
            return
        }
        nextFragmentID &+= 1
        let id = nextFragmentID
        let mtu = configuration.mtu
        fragmentScratch.withUnsafeMutableBytes { scratch in
            if packet.first.map({ $0 >> 4 }) == 4 {
                _ = try? IPv4Fragmenter.fragment(packet, mtu: mtu, scratch: scratch) { output.emit($0) }
            } else {
                _ = try? IPv6Fragmenter.fragment(packet, mtu: mtu, identification: id, scratch: scratch) { output.emit($0) }
            }
        }
        counters.fragmentedReplies += 1
    }

    /// Writes an ICMP(v6) error about a UDP datagram the application sent from `application` to `remote`.
    func emitICMPError(_ kind: ICMPErrorMessage.Kind, aboutUDPFrom application: SocketEndpoint, to remote: SocketEndpoint) {
        let n = scratch.withUnsafeMutableBytes {
            (try? ICMPErrorMessage.emit(kind, aboutUDPFrom: application, to: remote, from: remote.address, into: $0)) ?? 0
        }
        if n > 0 { scratch.withUnsafeBytes { output.emit(UnsafeRawBufferPointer(rebasing: $0[0..<n])) } }
    }
}
