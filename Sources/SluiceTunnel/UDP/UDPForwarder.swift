import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceWire

/// UDP from the packet flow, carried as UDP associations of the upstream (docs/protocol.md §6, or
/// SOCKS5 UDP ASSOCIATE). Loop-confined.
///
/// One mapping per application source address and port, for as long as it is used: whatever the
/// application sends from it goes out of one socket at the far end, and whatever reaches that socket comes
/// back with its real source (endpoint-independent mapping, "full cone"). Mappings expire after the
/// UDP timeout idle; at the mapping cap the one idle longest is closed first. With DNS redirect,
/// datagrams to port 53 go to the configured resolvers instead (`DNSRedirect`), and the answers come
/// back from the address the application asked; split DNS sends the queries it leaves to the host's
/// resolver around the tunnel (`DirectDNSPath`) when the host routes that resolver so.
final class UDPForwarder {
    struct Counters {
        var datagramsOut = 0
        var bytesOut = 0
        var datagramsIn = 0
        var bytesIn = 0
        /// Dropped toward the relay: no carrier was up.
        var droppedNoCarrier = 0
        /// Dropped toward the relay: the carrier's budget was used up (datagrams never queue).
        var droppedCarrierFull = 0
        /// Dropped: the upstream cannot carry UDP (a SOCKS5 server without UDP ASSOCIATE).
        var droppedUnsupported = 0
        /// Dropped toward the application: a reply from an address family the mapping is not.
        var droppedFamilyMismatch = 0
        var errorsToApplication = 0
        var evicted = 0
        var expired = 0
        /// Split DNS: queries sent around the tunnel to the host's own resolver (`DirectDNSPath`).
        var directDNSQueries = 0
        /// Split DNS: queries the direct path could not send.
        var droppedDirectDNS = 0
    }

    private unowned let engine: TunnelEngine
    private var mappings: [SocketEndpoint: UDPMapping] = [:]
    /// The mappings by last activity, for evicting the longest idle at the cap.
    private let idle = IdleList<UDPMapping>()
    private var sweepTimer: LoopTimer?
    private(set) var counters = Counters()

    init(engine: TunnelEngine) { self.engine = engine }

    var mappingCount: Int { mappings.count }

    /// One UDP datagram the application sent (a whole, reassembled IP packet).
    func input(_ summary: PacketSummary, packet: UnsafeRawBufferPointer) {
        let application = summary.source
        var destination = summary.destination
        var askedFor: SocketEndpoint?
        let payload = UnsafeRawBufferPointer(rebasing: packet[summary.payloadRange])
        switch engine.dnsRedirect.route(datagram: payload, to: destination, from: application) {
        case .resolver(let resolver):
            askedFor = destination
            destination = resolver
        case .asSent:
            if let sent = engine.sendAroundTunnel(payload, from: application, to: destination) {
                if sent { counters.directDNSQueries += 1 } else { counters.droppedDirectDNS += 1 }
                return
            }
        }
        let mapping = mappings[application] ?? newMapping(for: application)
        noteActivity(mapping)
        if let askedFor { mapping.answersFrom[destination] = askedFor }
        switch mapping.send(payload, to: destination) {
        case .sent:
            counters.datagramsOut += 1
            counters.bytesOut += payload.count
        case .noCarrier: counters.droppedNoCarrier += 1
        case .carrierFull: counters.droppedCarrierFull += 1
        case .unsupported: counters.droppedUnsupported += 1
        }
    }

    private func newMapping(for application: SocketEndpoint) -> UDPMapping {
        let cap = engine.configuration.maxUDPMappings
        if mappings.count >= cap, let oldest = idle.oldest {
            counters.evicted += 1
            close(oldest, why: "evicted for a new mapping (\(cap) held)")
        }
        let mapping = UDPMapping(application: application, forwarder: self)
        mappings[application] = mapping
        scheduleSweep()
        return mapping
    }

    /// `why` is built only when debug logging is on: at the cap this runs for every new socket.
    private func close(_ mapping: UDPMapping, why: @autoclosure () -> String) {
        Log.debug("UDP mapping \(mapping.application) closed: \(why())", "tunnel")
        mapping.close()
        mappings[mapping.application] = nil
        idle.remove(mapping)
    }

    private func noteActivity(_ mapping: UDPMapping) {
        mapping.lastActivity = engine.loop.now
        idle.touch(mapping)
    }

    /// Every second while mappings exist: closes those idle past the UDP timeout.
    private func scheduleSweep() {
        guard sweepTimer?.isPending != true else { return }
        // Strong capture, cancelled in closeAll (see EventLoop.schedule on weak captures).
        sweepTimer = engine.loop.schedule(afterMilliseconds: 1000) {
            let now = self.engine.loop.now
            let timeout = self.engine.configuration.udpTimeoutMilliseconds
            while let oldest = self.idle.oldest, now - oldest.lastActivity >= timeout {
                self.counters.expired += 1
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

    var upstream: Upstream { engine.upstream }

    /// A datagram from `source` for `mapping`'s application: written toward it, fragmented to the MTU.
    func deliver(_ payload: UnsafeRawBufferPointer, from source: SocketEndpoint, to mapping: UDPMapping) {
        noteActivity(mapping)
        let application = mapping.application
        guard source.address.isIPv4 == application.address.isIPv4 else {
            counters.droppedFamilyMismatch += 1
            return
        }
        counters.datagramsIn += 1
        counters.bytesIn += payload.count
        engine.emitUDP(payload, from: source, to: application)
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
            engine.refusedDestinations.note(remote, udp: true)
        }
        counters.errorsToApplication += 1
        engine.emitICMPError(kind, aboutUDPFrom: application, to: remote)
    }
}
