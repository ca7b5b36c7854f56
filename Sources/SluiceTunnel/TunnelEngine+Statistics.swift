import SluiceCrypto
import SluiceMux

extension TunnelEngine {
    /// A snapshot of the engine: carriers, flows, traffic, rates, and every drop by reason. On the
    /// loop thread.
    public func statistics() -> TunnelStatistics {
        let forwarder = udp.counters
        let up = counters.tcpBytesUp + forwarder.bytesOut, down = counters.tcpBytesDown + forwarder.bytesIn
        let fragments = reassembler.counters, lwip = stack.counters, out = output.counters
        var drops: [String: Int] = [
            "malformed-packet": counters.malformed + lwip.droppedMalformed,
            "unsupported-protocol": counters.unsupportedProtocol + lwip.droppedUnsupported,
            "icmp-not-echo": counters.icmpNotEcho,
            "loopback-destination": counters.loopback + lwip.droppedLoopback,
            "fragment-malformed": fragments.malformed,
            "fragment-too-big": fragments.tooBig,
            "fragment-duplicate": fragments.duplicates,
            "fragment-overlapping": fragments.overlapping,
            "fragment-inconsistent": fragments.inconsistent,
            "fragment-over-budget": fragments.overBudget,
            "fragment-timed-out": fragments.timedOut,
            "fragment-evicted": fragments.evicted,
            "tcp-refused-no-carrier": counters.tcpRefusedNoCarrier,
            "udp-no-carrier": forwarder.droppedNoCarrier,
            "udp-carrier-full": forwarder.droppedCarrierFull,
            "udp-upstream-unsupported": forwarder.droppedUnsupported,
            "udp-family-mismatch": forwarder.droppedFamilyMismatch,
            "udp-unencodable": counters.udpUnencodable,
            "dns-direct-send-failed": forwarder.droppedDirectDNS,
            "packet-too-long": out.tooLong,
            "packet-flow-write-failed": out.writeFailures,
        ]
        for (reason, count) in counters.tcpRefusedByRelay { drops["tcp-refused-by-relay-\(reason.name)"] = count }
        drops.merge(upstream.drops) { $0 + $1 }
        let events: [String: Int] = [
            "echo-replies": counters.echoReplies,
            "tcp-resets-sent": lwip.resetsSent,
            "tcp-time-wait-reaped": lwip.timeWaitReaped,
            "tcp-time-wait-reused": lwip.timeWaitReused,
            "tcp-packets-into-lwip": lwip.packetsIn,
            "tcp-packets-from-lwip": lwip.packetsOut,
            "fragments-received": fragments.fragments,
            "datagrams-reassembled": fragments.reassembled,
            "replies-fragmented": counters.fragmentedReplies,
            "icmp-errors-to-applications": forwarder.errorsToApplication,
            "udp-mappings-evicted": forwarder.evicted,
            "udp-mappings-expired": forwarder.expired,
            "dns-queries-around-tunnel": forwarder.directDNSQueries,
            "super-packets": output.coalescer?.superPackets ?? 0,
        ]
        return TunnelStatistics(
            state: state, relay: upstream.name, relayPublicKey: relayPublicKey, relays: upstream.relayStatistics(),
            carriers: upstream.statistics(), udpPath: upstream.udpPath,
            flows: .init(tcp: stack.flowCount, tcpOpening: stack.heldSYNCount, udpMappings: udp.mappingCount),
            traffic: .init(
                packetsFromApplications: counters.packetsIn, bytesFromApplications: counters.bytesIn,
                packetsToApplications: out.packets, bytesToApplications: out.bytes,
                tcpBytesUp: counters.tcpBytesUp, tcpBytesDown: counters.tcpBytesDown,
                udpDatagramsUp: forwarder.datagramsOut, udpBytesUp: forwarder.bytesOut,
                udpDatagramsDown: forwarder.datagramsIn, udpBytesDown: forwarder.bytesIn),
            rates: rates.rates(at: loop.now, up: up, down: down),
            drops: drops.filter { $0.value != 0 }, events: events.filter { $0.value != 0 })
    }

    /// The (first) relay's key as configured, base64; empty with a SOCKS5 upstream.
    private var relayPublicKey: String {
        if case .relays(let relays, _, _) = configuration.upstream { return relays[0].publicKey.base64 }
        return ""
    }

    /// Samples the payload totals once a second for `TunnelStatistics.rates`.
    func scheduleRateSample() {
        let forwarder = udp.counters
        rates.sample(at: loop.now, up: counters.tcpBytesUp + forwarder.bytesOut, down: counters.tcpBytesDown + forwarder.bytesIn)
        // Strong capture, cancelled in stop(): see EventLoop.schedule on weak captures.
        rateTimer = loop.schedule(afterMilliseconds: 1000) { self.scheduleRateSample() }
    }
}
