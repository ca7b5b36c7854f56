import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceWire

/// UDP from the TUN, carried as UDP associations (docs/protocol.md §6). Stack-thread confined.
///
/// One mapping per application source address and port, for as long as it is used: whatever the
/// application sends from it goes out of one relay-side socket, and whatever reaches that socket comes
/// back with its real source (endpoint-independent mapping, "full cone"). Mappings expire after
/// `udpTimeout` idle; at `maxUDPMappings` the one idle longest is closed first. With `--dns`, datagrams
/// to port 53 go to the configured resolvers instead, and the answers come back from the address the
/// application asked.
final class UDPForwarder {
    struct Counters {
        var datagramsOut = 0
        var datagramsIn = 0
        var dropped = 0
        var errorsToApplication = 0
    }

    private unowned let client: TunnelClient
    private var mappings: [SocketEndpoint: UDPMapping] = [:]
    /// The mappings by last activity, for evicting the longest idle at the cap.
    private let idle = IdleList<UDPMapping>()
    private var sweepTimer: LoopTimer?
    private(set) var counters = Counters()

    init(client: TunnelClient) { self.client = client }

    var mappingCount: Int { mappings.count }

    /// One UDP datagram the application sent (a whole, reassembled IP packet).
    func input(_ summary: PacketSummary, packet: UnsafeRawBufferPointer) {
        let application = summary.source
        var destination = summary.destination
        var askedFor: SocketEndpoint?
        if let resolver = client.dnsResolver(for: destination, from: application) {
            askedFor = destination
            destination = resolver
        }
        let mapping = mappings[application] ?? newMapping(for: application)
        noteActivity(mapping)
        if let askedFor { mapping.answersFrom[destination] = askedFor }
        let payload = UnsafeRawBufferPointer(rebasing: packet[summary.payloadRange])
        if mapping.send(payload, to: destination) {
            counters.datagramsOut += 1
        } else {
            counters.dropped += 1
        }
    }

    private func newMapping(for application: SocketEndpoint) -> UDPMapping {
        if mappings.count >= client.settings.maxUDPMappings, let oldest = idle.oldest {
            close(oldest, why: "evicted for a new mapping (\(client.settings.maxUDPMappings) held)")
        }
        let mapping = UDPMapping(application: application, forwarder: self)
        mappings[application] = mapping
        scheduleSweep()
        return mapping
    }

    private func close(_ mapping: UDPMapping, why: String) {
        Log.debug("UDP mapping \(mapping.application) closed: \(why)", "client")
        mapping.close()
        mappings[mapping.application] = nil
        idle.remove(mapping)
    }

    private func noteActivity(_ mapping: UDPMapping) {
        mapping.lastActivity = client.loop.now
        idle.touch(mapping)
    }

    /// Every second while mappings exist: closes those idle past the UDP timeout.
    private func scheduleSweep() {
        guard sweepTimer?.isPending != true else { return }
        // Strong capture, cancelled in closeAll (see EventLoop.schedule on weak captures).
        sweepTimer = client.loop.schedule(afterMilliseconds: 1000) {
            let now = self.client.loop.now
            let timeout = self.client.settings.udpTimeoutMilliseconds
            while let oldest = self.idle.oldest, now - oldest.lastActivity >= timeout {
                self.close(oldest, why: "idle for \(timeout / 1000) s")
            }
            if !self.mappings.isEmpty { self.scheduleSweep() }
        }
    }

    /// Closes every mapping (shutdown).
    func closeAll() {
        for mapping in mappings.values {
            mapping.close()
            idle.remove(mapping)
        }
        mappings.removeAll()
        sweepTimer?.cancel()
    }

    // MARK: called by UDPMapping

    func carrier() -> MuxSession? { client.pool.pick()?.session }

    /// A datagram from `source` for `application`: written to the TUN, fragmented to the MTU.
    func deliver(_ payload: UnsafeRawBufferPointer, from source: SocketEndpoint, to mapping: UDPMapping) {
        noteActivity(mapping)
        let application = mapping.application
        guard source.address.isIPv4 == application.address.isIPv4 else {
            counters.dropped += 1
            return
        }
        counters.datagramsIn += 1
        client.emitUDP(payload, from: source, to: application)
    }

    /// The relay reports that a datagram to `remote` failed: the matching ICMP error to the application.
    func deliverError(_ code: DatagramErrorCode, mtu: Int, about remote: SocketEndpoint, from application: SocketEndpoint) {
        guard remote.address.isIPv4 == application.address.isIPv4 else { return }
        let kind: ICMPErrorMessage.Kind
        switch code {
        case .portUnreachable: kind = .portUnreachable
        case .unreachable: kind = .hostUnreachable
        case .tooBig: kind = .tooBig(mtu: UInt16(clamping: mtu))
        case .forbidden:
            kind = .administrativelyProhibited
            client.refusedDestinations.note(remote, udp: true)
        }
        counters.errorsToApplication += 1
        client.emitICMPError(kind, aboutUDPFrom: application, to: remote)
    }
}

/// One application source endpoint and its association on a carrier. Stack-thread confined.
final class UDPMapping: MuxStreamHandler {
    let application: SocketEndpoint
    private unowned let forwarder: UDPForwarder
    private var stream: MuxStream?
    var lastActivity: UInt64 = 0
    /// Resolvers substituted by `--dns`, and the address the application asked: answers from the
    /// resolver must appear to come from there.
    var answersFrom: [SocketEndpoint: SocketEndpoint] = [:]

    init(application: SocketEndpoint, forwarder: UDPForwarder) {
        self.application = application
        self.forwarder = forwarder
    }

    /// Sends one datagram, opening the association on first use (or after the relay closed it).
    func send(_ payload: UnsafeRawBufferPointer, to destination: SocketEndpoint) -> Bool {
        if stream == nil || stream!.isClosed {
            guard let session = forwarder.carrier() else { return false }
            stream = session.openAssociation(to: Destination(destination), handler: self)
        }
        return stream!.sendDatagram(payload, endpoint: destination)
    }

    func close() {
        stream?.reset(.closed, message: "UDP mapping closed")
        stream?.handler = nil
        stream = nil
    }

    func stream(_ stream: MuxStream, didReceiveDatagram payload: UnsafeRawBufferPointer, endpoint: SocketEndpoint) {
        forwarder.deliver(payload, from: answersFrom[endpoint] ?? endpoint, to: self)
    }

    func stream(_ stream: MuxStream, datagramTo endpoint: SocketEndpoint, failed code: DatagramErrorCode, mtu: Int) {
        forwarder.deliverError(code, mtu: mtu, about: answersFrom[endpoint] ?? endpoint, from: application)
    }

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {
        // The relay closed it (idle there, or its cap) or the carrier died: the next datagram opens
        // a new association.
        if self.stream === stream { self.stream = nil }
    }
}
