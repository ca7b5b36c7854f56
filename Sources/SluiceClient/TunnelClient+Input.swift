import SluiceLog
import SluiceWire

/// Counters of what arrived on the TUN and what became of it.
struct InputCounters {
    var packets = 0
    var malformed = 0
    var unsupported = 0
    var loopback = 0
    var fragments = 0
    var echoReplies = 0
    var writeFailures = 0
}

/// Every packet read from the TUN passes through here once: parsed, reassembled if it is a fragment,
/// and handed to lwIP (TCP), the UDP forwarder, or answered (ICMP echo). Stack thread only.
extension TunnelClient {
    func dispatch(_ packet: UnsafeRawBufferPointer) {
        counters.packets += 1
        do {
            let summary = try PacketSummary(parsing: packet)
            if summary.destination.address.isLoopback {
                counters.loopback += 1
                return
            }
            if summary.protocol == .tcp {
                stack.input(packet, summary: summary)
            } else {
                udp.input(summary, packet: packet)
            }
        } catch .fragment {
            counters.fragments += 1
            if case .reassembled(let whole) = reassembler.feed(packet, now: loop.now) { dispatch(whole) }
        } catch .unsupportedProtocol(let proto) where proto == .icmp || proto == .icmpv6 {
            answerEcho(packet)
        } catch .unsupportedProtocol {
            counters.unsupported += 1
        } catch {
            counters.malformed += 1
        }
    }

    /// Echo requests to any address are answered here, by the client (as hev-socks5-tunnel does):
    /// ping through the tunnel shows the TUN path works, not that the destination is up. Other ICMP
    /// from applications is dropped.
    private func answerEcho(_ packet: UnsafeRawBufferPointer) {
        guard let icmp = try? ICMPSummary(parsing: packet), icmp.isEchoRequest, !icmp.destination.isLoopback else {
            counters.unsupported += 1
            return
        }
        let n = output.withUnsafeMutableBytes { (try? ICMPEchoReply.emit(answering: packet, into: $0)) ?? 0 }
        guard n > 0 else {
            counters.malformed += 1
            return
        }
        counters.echoReplies += 1
        output.withUnsafeBytes { writeFragmented(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }

    /// The resolver a datagram or TCP flow to `destination` goes to instead, when `--dns` is set and
    /// it is DNS (port 53); spread over several resolvers by the application's port.
    func dnsResolver(for destination: SocketEndpoint, from application: SocketEndpoint) -> SocketEndpoint? {
        guard destination.port == 53, !settings.dns.isEmpty else { return nil }
        let resolver = settings.dns[Int(application.port) % settings.dns.count]
        return SocketEndpoint(address: resolver, port: 53)
    }

    /// Writes a UDP datagram toward the application, fragmented to the TUN's MTU.
    func emitUDP(_ payload: UnsafeRawBufferPointer, from source: SocketEndpoint, to application: SocketEndpoint) {
        nextFragmentID &+= 1
        let id = nextFragmentID
        let length = output.withUnsafeMutableBytes {
            (try? UDPPacket.emit(from: source, to: application, payload: payload, identification: UInt16(truncatingIfNeeded: id),
                                 dontFragment: false, into: $0)) ?? 0
        }
        guard length > 0 else {
            counters.writeFailures += 1
            return
        }
        output.withUnsafeBytes { writeFragmented(UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
    }

    /// Writes a packet the client synthesised (a UDP reply, an echo reply), as fragments when it is
    /// larger than the TUN's MTU: as its source, the client may fragment it (IPv6 included).
    func writeFragmented(_ packet: UnsafeRawBufferPointer) {
        guard packet.count > settings.mtu else {
            writeTUN(packet)
            return
        }
        nextFragmentID &+= 1
        let id = nextFragmentID
        fragmentScratch.withUnsafeMutableBytes { scratch in
            if packet.first.map({ $0 >> 4 }) == 4 {
                _ = try? IPv4Fragmenter.fragment(packet, mtu: settings.mtu, scratch: scratch) { writeTUN($0) }
            } else {
                _ = try? IPv6Fragmenter.fragment(packet, mtu: settings.mtu, identification: id, scratch: scratch) { writeTUN($0) }
            }
        }
    }

    /// Writes an ICMP(v6) error about a UDP datagram the application sent from `application` to `remote`.
    func emitICMPError(_ kind: ICMPErrorMessage.Kind, aboutUDPFrom application: SocketEndpoint, to remote: SocketEndpoint) {
        let n = output.withUnsafeMutableBytes {
            (try? ICMPErrorMessage.emit(kind, aboutUDPFrom: application, to: remote, from: remote.address, into: $0)) ?? 0
        }
        if n > 0 { output.withUnsafeBytes { writeTUN(UnsafeRawBufferPointer(rebasing: $0[0..<n])) } }
    }

    func writeTUN(_ packet: UnsafeRawBufferPointer) {
        if let coalescer {
            coalescer.emit(packet)
            return
        }
        if case .done = (try? tun.write(packet)) ?? .wouldBlock { return }
        counters.writeFailures += 1
    }
}
