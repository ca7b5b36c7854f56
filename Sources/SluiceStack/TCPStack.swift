import CLwIP
import CSluiceShims
import SluiceLog
import SluiceWire

/// Decisions the stack asks of its owner, and flows it hands over. Called on the stack thread.
public protocol TCPStackDelegate: AnyObject {
    /// An application sent a SYN to a destination the stack has no flow for. The SYN is held (neither
    /// answered nor dropped) until the owner calls `admit(_:)` or `refuse(_:)`.
    func stack(_ stack: TCPStack, didReceiveSYNFor key: FlowKey)
    /// The application gave up on a held SYN (it sent RST). No decision is needed any more.
    func stack(_ stack: TCPStack, didAbandon key: FlowKey)
    /// An admitted flow finished its handshake with the application.
    func stack(_ stack: TCPStack, didAccept flow: TCPFlow)
}

/// Counters of the packet path; read them on the stack thread.
public struct StackCounters: Sendable {
    public var packetsIn = 0
    public var packetsOut = 0
    public var droppedMalformed = 0
    public var droppedUnsupported = 0
    public var droppedLoopback = 0
    public var resetsSent = 0
    public var timeWaitReused = 0
    public var timeWaitReaped = 0
    /// Times `runTimers` ran while output packets were still held (`holdCurrentOutput`): lwIP skips
    /// a pcb's retransmission timeout for that tick when one of its unacknowledged segments is held,
    /// so whoever holds output releases it before running the timers. Stays 0 when it does.
    public var timersRunWithHeldOutput = 0
}

/// lwIP, owned by one thread, terminating TCP to any IPv4 or IPv6 destination.
///
/// Accept-any: unmodified lwIP accepts only packets addressed to its own netif. Before each inbound
/// packet the destination is written into the netif's address (IPv4 field, IPv6 slot 0) and the
/// single listening pcb's port is set to the packet's destination port; accepted pcbs keep the
/// original destination as their local address. Only one TCPStack may exist per process (lwIP's
/// state is global), and nothing but the owning thread may ever call into it.
public final class TCPStack {
    /// Send buffer of each accepted flow: 1 MiB, sixteen times lwIP's compiled-in 64 KiB, and below the
    /// ~1.4 MiB its TCP_SND_QUEUELEN (180 segments of 8 KiB) allows. A stream's window lets the relay
    /// send up to 2 MiB ahead (docs/protocol.md §4.3); what lwIP cannot take waits in `FlowBridge`'s
    /// queue and is copied once more. Four downloads at once, whose application reads slower than the
    /// tunnel delivers, filled 256 KiB and went through that queue.
    static let sendBuffer: UInt32 = 1024 * 1024
    /// Payload of one lwIP segment with `largeSegments`: 8 KiB, where the MSS's 1,460 bytes cost a
    /// download's client a quarter to a third more CPU per GB (3b6ee0c). lwIP's windows are 32 bits here
    /// (Debian's lwipopts.h sets LWIP_WND_SCALE, so `tcpwnd_size_t` is u32), so a larger payload would
    /// fit; but 9,355 or 16,371 bytes left a download's TUN writes per GB where they were
    /// (`Benchmarks/e2e/reqcpu.py --test iperf-down --syscalls`): one kernel ACK, not the 64 KiB a
    /// super-packet may hold, sets how much goes out at once. (lwIP never makes segments above half
    /// the peer's largest window.)
    static let largeSegmentPayload: UInt16 = 8192

    /// Whether lwIP's segments toward the application may exceed the MTU, because the output path
    /// hands them to the kernel as GSO writes, which cuts them at the MTU (`SegmentCoalescer`).
    /// Segments cost lwIP per segment — allocation, headers, checksum, output — whatever their
    /// size: 8 KiB instead of 1,460 bytes divides that by 5.6 on a download.
    let largeSegments: Bool

    /// `unowned`, not `weak`: a weak reference would put every retain of the client (its owner) on
    /// the Swift runtime's slow path (see EventLoop.schedule). The delegate outlives the stack.
    public unowned var delegate: TCPStackDelegate?
    public private(set) var counters = StackCounters()

    var netif: UnsafeMutablePointer<netif>!
    private var listener: UnsafeMutablePointer<tcp_pcb>!
    let output: (UnsafeRawBufferPointer) -> Void
    private var heldSYNs: [FlowKey: [UInt8]] = [:]
    private var admitted: Set<FlowKey> = []
    private var flows: [FlowKey: TCPFlow] = [:]
    private var outputQueue: [TCPFlow] = []
    /// The flows `flushOutput` is sending for, while new ones queue in `outputQueue`.
    private var flushing: [TCPFlow] = []
    var scratch = [UInt8](repeating: 0, count: 65536)
    /// The single-buffer packet being handed to `output`, during that call only
    /// (`holdCurrentOutput`).
    var outputBuffer: UnsafeMutablePointer<pbuf>?
    /// Output packets `holdCurrentOutput` holds and `releaseHeldOutput` has not released yet.
    var heldOutputCount = 0

    /// Whether lwIP skips summing the bytes it copies in (`TCPFlow.write`): the output path marks
    /// every data segment's checksum partial, for the device to compute (`SegmentChecksum` is the
    /// other direction). Only where lwIP's checksum reaches Sluice's routine.
    let leavesDataChecksums: Bool

    /// - Parameters:
    ///   - mtu: the TUN's MTU.
    ///   - largeSegments: `output` takes segments longer than one MTU (see the property).
    ///   - dataChecksumsLeftToOutput: whoever takes `output` rewrites every data segment's TCP
    ///     checksum field as a partial checksum (a TUN with offloads), so lwIP's own is never used.
    ///   - output: writes one IP packet to the TUN.
    public init(mtu: Int, largeSegments: Bool = false, dataChecksumsLeftToOutput: Bool = false,
                output: @escaping (UnsafeRawBufferPointer) -> Void) throws(LwIPError) {
        self.output = output
        self.largeSegments = largeSegments
        leavesDataChecksums = dataChecksumsLeftToOutput && Self.takesUnverifiedSegments
        LwIPRuntime.initializeOnce()
        let context = Unmanaged.passUnretained(self).toOpaque()
        // With large segments lwIP must not fragment what exceeds the MTU: its netif gets the most an
        // IP packet can hold. (Its MSS is capped by TCP_MSS, 1,460, at the handshake all the same.)
        let netifMTU = largeSegments ? 65535 : UInt16(clamping: mtu)
        guard let netif = sluice_netif_create(context, lwipOutput4, lwipOutput6, netifMTU) else {
            throw .interfaceFailed
        }
        self.netif = netif
        guard let listener = sluice_tcp_listen_any(context, lwipAccept) else {
            sluice_netif_destroy(netif)
            throw .listenerFailed
        }
        self.listener = listener
    }

    /// Aborts every flow and removes the netif. The stack cannot be used afterwards.
    public func shutdown() {
        for flow in Array(flows.values) { flow.abort() }
        if let listener { tcp_close(listener) }
        listener = nil
        if let netif { sluice_netif_destroy(netif) }
        netif = nil
    }

    /// Number of live flows (accepted, not yet closed).
    public var flowCount: Int { flows.count }

    /// SYNs held while their owner decides (`admit` or `refuse`).
    public var heldSYNCount: Int { heldSYNs.count }

    /// Milliseconds until lwIP's next timer is due.
    public var timerSleepMilliseconds: UInt32 { sys_timeouts_sleeptime() }

    /// Runs lwIP's due timers (retransmission, delayed ACK) and frees every TIME_WAIT pcb (see
    /// `sluice_tcp_reap_timewait`). Call at the end of each loop turn, outside lwIP callbacks: a pcb
    /// that entered TIME_WAIT during the turn has sent its final ACK by then.
    ///
    /// lwIP scans its TIME_WAIT list linearly for every inbound segment and every removal, so it must
    /// stay short: reaped every half second it held ~1 s of closed connections, and at 5,000
    /// connections a second that scan took a third of the client's time (perf, `make bench` tcp_cc).
    public func runTimers() {
        if heldOutputCount > 0 && timerSleepMilliseconds == 0 { counters.timersRunWithHeldOutput += 1 }
        sys_check_timeouts()
        counters.timeWaitReaped += Int(sluice_tcp_reap_timewait(0))
    }

    /// One IP packet read from the TUN.
    public func input(_ packet: UnsafeRawBufferPointer) {
        let info: PacketSummary
        do {
            info = try PacketSummary(parsing: packet)
        } catch {
            counters.packetsIn += 1
            if case .unsupportedProtocol = error { counters.droppedUnsupported += 1 } else { counters.droppedMalformed += 1 }
            return
        }
        input(packet, summary: info)
    }

    /// One IP packet the caller has already parsed (the client's TUN dispatch does, once per packet),
    /// its TCP checksum verified by lwIP or, for a segment the local kernel made, not (`checksum`;
    /// `.locallyMade` only where `takesUnverifiedSegments`, which the caller checked before it chose
    /// not to complete the checksum).
    public func input(_ packet: UnsafeRawBufferPointer, summary info: PacketSummary, checksum: SegmentChecksum = .verify) {
        guard admits(packet, info), let p = Self.pbufCopy(of: packet) else { return }
        feed(p, info, checksum: checksum)
    }

    /// The same for a packet lwIP may keep as it is: the buffer becomes the segment's pbuf, without a
    /// copy (`PacketBuffer`), and is freed when lwIP or the flow is done with it.
    public func input(_ buffer: consuming PacketBuffer, summary info: PacketSummary, checksum: SegmentChecksum = .verify) {
        guard admits(UnsafeRawBufferPointer(buffer.packet), info) else { return }
        feed(buffer.adopt(), info, checksum: checksum)
    }

    /// Counts the packet and decides whether it goes to lwIP: not when it is no TCP, is for loopback,
    /// or is a SYN of a new flow (held until the upstream answers: `admit`, `refuse`) or a segment
    /// after such a held SYN.
    private func admits(_ packet: UnsafeRawBufferPointer, _ info: PacketSummary) -> Bool {
        counters.packetsIn += 1
        guard info.protocol == .tcp else {
            counters.droppedUnsupported += 1
            return false
        }
        if info.destination.address.isLoopback {
            counters.droppedLoopback += 1
            return false
        }
        let key = FlowKey(application: info.source, destination: info.destination)
        if info.tcpFlags.contains(.syn) && !info.tcpFlags.contains(.ack) {
            if flows[key] == nil && !admitted.contains(key) {
                let isNew = heldSYNs[key] == nil
                heldSYNs[key] = Array(packet)  // a retransmitted SYN replaces the held one
                if isNew { delegate?.stack(self, didReceiveSYNFor: key) }
                return false
            }
        } else if !heldSYNs.isEmpty, heldSYNs[key] != nil {
            if info.tcpFlags.contains(.rst) {
                heldSYNs[key] = nil
                delegate?.stack(self, didAbandon: key)
            }
            return false
        }
        return true
    }

    /// Lets lwIP answer the held SYN of `key`: the relay reached the destination.
    public func admit(_ key: FlowKey) {
        guard let syn = heldSYNs.removeValue(forKey: key) else { return }
        admitted.insert(key)
        dropTimeWait(key)
        guard let p = syn.withUnsafeBytes(Self.pbufCopy(of:)) else { return }
        feed(p, destination: key.destination)
    }

    /// Answers the held SYN of `key` with a RST, so the application's connect() fails with
    /// ECONNREFUSED. Also forgets an admitted flow that has not completed its handshake.
    public func refuse(_ key: FlowKey) {
        admitted.remove(key)
        guard let syn = heldSYNs.removeValue(forKey: key) else { return }
        let n = syn.withUnsafeBytes { synBytes in
            scratch.withUnsafeMutableBytes { (try? TCPReset.emit(answering: synBytes, into: $0)) ?? 0 }
        }
        if n > 0 {
            counters.resetsSent += 1
            scratch.withUnsafeBytes { emit(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }

    /// Sends what flows queued during this loop turn (`tcp_output`), with the ACK each flow owes the
    /// application. Call at the end of each turn.
    ///
    /// Every byte received in the turn is acknowledged by its end. lwIP on its own acknowledges every
    /// second segment from inside its input and leaves a lone one to its delayed-ACK timer, which
    /// runs every 250 ms: past the 200 ms after which an application's kernel retransmits, and far
    /// past Linux's 40 ms. An application that writes twice with Nagle on holds its second write
    /// until the first is acknowledged, so each such exchange stalled that long. The flows defer
    /// lwIP's immediate ACKs to here (`TCPFlow.lwipReceived`), so a turn that read several
    /// super-segments answers them with one ACK, which also carries the window `openWindow` opened
    /// — or announces a window that reopened in this turn, however little (`sluice_tcp_ack_owed`).
    public func flushOutput() {
        guard !outputQueue.isEmpty else { return }
        // The queues swap rather than copy: a copy would allocate a new array every turn.
        swap(&outputQueue, &flushing)
        for flow in flushing {
            flow.needsOutput = false
            flow.openWindow()
            guard let pcb = flow.pcb else { continue }
            if sluice_tcp_ack_owed(pcb) != 0 { sluice_tcp_ack_now(pcb) }
            tcp_output(pcb)
        }
        flushing.removeAll(keepingCapacity: true)
    }

    func emit(_ packet: UnsafeRawBufferPointer) {
        counters.packetsOut += 1
        output(packet)
    }

    /// A pbuf holding a copy of `packet`, or nil when it is too long for one or memory is short.
    private static func pbufCopy(of packet: UnsafeRawBufferPointer) -> UnsafeMutablePointer<pbuf>? {
        guard packet.count <= 0xFFFF, let p = pbuf_alloc(PBUF_RAW, UInt16(packet.count), PBUF_RAM) else { return nil }
        p.pointee.payload.copyMemory(from: packet.baseAddress!, byteCount: packet.count)
        return p
    }

    /// Hands a segment to lwIP, its checksum verified or, for one the local kernel made, not.
    private func feed(_ p: UnsafeMutablePointer<pbuf>, _ info: PacketSummary, checksum: SegmentChecksum) {
        if checksum == .locallyMade {
            let length = info.length - info.transportOffset
            feed(p, destination: info.destination,
                 unverified: (info.transportOffset, length, Self.passingSum(source: info.source.address, destination: info.destination.address, length: length)))
        } else {
            feed(p, destination: info.destination)
        }
    }

    /// Gives `p` to lwIP as a packet from the application to `destination` (lwIP frees it). With
    /// `unverified`, lwIP's checksum routine answers its one sum over the TCP segment (`offset`,
    /// `length`) with `sum` instead of reading it (`sluice_checksum_expect`; see
    /// `SegmentChecksum.locallyMade`).
    private func feed(_ p: UnsafeMutablePointer<pbuf>, destination: SocketEndpoint,
                      unverified: (offset: Int, length: Int, sum: UInt16)? = nil) {
        if let unverified { sluice_checksum_expect(p.pointee.payload + unverified.offset, Int32(unverified.length), unverified.sum) }
        defer { if unverified != nil { sluice_checksum_expect_none() } }
        withUnsafeTemporaryAllocation(byteCount: 16, alignment: 8) { raw in
            destination.address.store(into: raw, at: 0)
            let bytes = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            if destination.address.isIPv4 {
                sluice_netif_set_dest4(netif, bytes)
            } else {
                sluice_netif_set_dest6(netif, bytes)
            }
        }
        sluice_tcp_listen_set_port(listener, destination.port)
        if sluice_netif_input(netif, p) != err_t(ERR_OK.rawValue) { pbuf_free(p) }
    }

    /// A new SYN for a 4-tuple lwIP still holds in TIME_WAIT would get a bare ACK; a kernel server
    /// accepts it, so the old connection's remains go first.
    private func dropTimeWait(_ key: FlowKey) {
        let dropped = Self.withAddressPair { local, remote in
            local.initializeMemory(as: UInt8.self, repeating: 0)
            remote.initializeMemory(as: UInt8.self, repeating: 0)
            key.destination.address.store(into: local, at: 0)
            key.application.address.store(into: remote, at: 0)
            return sluice_tcp_drop_timewait(local.baseAddress!.assumingMemoryBound(to: UInt8.self), key.destination.port,
                                            remote.baseAddress!.assumingMemoryBound(to: UInt8.self), key.application.port)
        }
        if dropped != 0 { counters.timeWaitReused += 1 }
    }

    /// Two 16-byte buffers on the stack for the local and remote addresses lwIP's shims read and
    /// write: once per new connection, where two arrays cost two allocations and reading them back
    /// as `IPAddress` through its generic `init(bytes:)` looked up generic metadata at run time —
    /// together about 7,000 of the client's 54,000 instructions per connection (callgrind of
    /// `sluice up` under `Benchmarks/e2e/reqcpu.py --test tcp-cc --in-flight 1`).
    private static func withAddressPair<R>(
        _ body: (UnsafeMutableRawBufferPointer, UnsafeMutableRawBufferPointer) -> R
    ) -> R {
        withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { both in
            body(UnsafeMutableRawBufferPointer(rebasing: both[0..<16]), UnsafeMutableRawBufferPointer(rebasing: both[16..<32]))
        }
    }

    // MARK: flow bookkeeping

    func accepted(_ pcb: UnsafeMutablePointer<tcp_pcb>) -> TCPFlow? {
        var localPort: UInt16 = 0, remotePort: UInt16 = 0
        let key = Self.withAddressPair { local, remote in
            let family = sluice_tcp_endpoints(pcb, local.baseAddress!.assumingMemoryBound(to: UInt8.self), &localPort,
                                              remote.baseAddress!.assumingMemoryBound(to: UInt8.self), &remotePort)
            func address(_ bytes: UnsafeMutableRawBufferPointer) -> IPAddress {
                family == 6 ? IPAddress(v6In: UnsafeRawBufferPointer(bytes), at: 0) : IPAddress(v4In: UnsafeRawBufferPointer(bytes), at: 0)
            }
            return FlowKey(application: SocketEndpoint(address: address(remote), port: remotePort),
                           destination: SocketEndpoint(address: address(local), port: localPort))
        }
        guard admitted.remove(key) != nil, let delegate else {
            Log.debug("unexpected accept for \(key); aborting", "stack")
            return nil
        }
        let flow = TCPFlow(key: key, pcb: pcb, stack: self)
        flows[key] = flow
        sluice_tcp_nagle_disable(pcb)
        sluice_tcp_set_sndbuf(pcb, Self.sendBuffer)
        if largeSegments { sluice_tcp_set_mss(pcb, Self.largeSegmentPayload) }
        delegate.stack(self, didAccept: flow)
        return flow
    }

    func forget(_ flow: TCPFlow) {
        if flows[flow.key] === flow { flows[flow.key] = nil }
    }

    func scheduleOutput(_ flow: TCPFlow) { outputQueue.append(flow) }
}
