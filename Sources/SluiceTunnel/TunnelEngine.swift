import CSluiceShims
import SluiceCarrier
import SluiceCrypto
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceStack
import SluiceWire

// The data path of one TCP byte, in order (as wireguard-go explains its own in device/send.go).
//
// Application → relay:
//  1. The packet flow reports readable; `readFlow` reads a batch (`PacketFlow.readPackets`).
//  2. `dispatch` parses it once (`PacketSummary`): TCP goes to lwIP (`TCPStack.input`; a large
//     packet in the memory it was read into, `PacketBatch.take`, without a copy) — a segment
//     the local kernel made with its checksum left partial (offload) unverified and as it is, other
//     packets with a partial checksum completed first. A SYN for
//     a new flow is held there and reported (`stack(_:didReceiveSYNFor:)`): the engine opens a
//     stream through its `Upstream` (`FlowBridge.open`: OPEN on the least-loaded carrier, or a SOCKS5
//     CONNECT), and only its success (OPEN_OK, the SOCKS reply) lets lwIP answer the SYN
//     (`TCPStack.admit`); a refusal (RESET, a failed reply) answers it with RST.
//  3. lwIP queues the segment's bytes on the flow (`TCPFlow.lwipReceived`); `FlowBridge.pumpToRelay`
//     reads as many as the stream's credit and the carrier budget take (`UpstreamStream.send` →
//     `MuxStream.send`), which encodes DATA frames into the session's record buffer. (A SOCKS5
//     stream takes what its socket's queue has room for instead: `SocksStream`.)
//  4. End of the loop turn, in this order:
//     a. the carriers seal their records and write them (`Carrier.flush`, queued by `afterTurn`);
//     b. lwIP's timers run and every flow that received or was read opens its receive window once
//        and sends what it queued with the ACK it owes (`TCPStack.runTimers`, `flushOutput`:
//        `tcp_recved`, `tcp_output`), so the application gets one ACK per turn, neither one per
//        segment nor one left to lwIP's 250 ms delayed-ACK timer;
//     c. packets queued toward the applications go out (`PacketOutput.flush`), TCP segments joined
//        into super-packets when the flow takes them.
//     Carriers first, so the relay has the bytes before the application hears they were taken.
//
// Relay → application:
//  1. A carrier's socket is readable; `Carrier` opens the records and hands each frame to its
//     session; DATA reaches `FlowBridge.stream(_:didReceive:)`.
//  2. `TCPFlow.write` copies into lwIP's send buffer as far as it has room (the rest waits in the
//     bridge, bounded by the stream window); credit goes back to the relay only for bytes lwIP took.
//     With offloads lwIP does not sum what it copies: every data segment leaves with a partial
//     checksum for the kernel (`TCPStack.leavesDataChecksums`).
//  3. End of turn as above: `tcp_output` emits the segments, `PacketOutput` joins and writes them;
//     lwIP's `sent` callback (the application's ACKs) drains the bridge and returns more credit.
//
// UDP skips lwIP: `UDPForwarder` maps each application source endpoint to one association
// (DATAGRAM frames, or a SOCKS5 UDP ASSOCIATE), and writes replies as whole IP packets (fragmented
// to the MTU) to the output.
//
// The `Upstream` seam (Upstream/Upstream.swift) is crossed once per flow to open it and once per
// chunk of bytes (a pbuf, a DATA frame) after that, never per byte.

/// The client tunnel engine: lwIP for TCP, UDP mappings with DNS redirect, ICMP echo, flows bridged
/// to streams of an `Upstream` (encrypted carriers to a relay with reconnects, or a SOCKS5 server)
/// — driven by any `PacketFlow`, reaching the upstream through any `CarrierTransport`, reporting to
/// a `TunnelEventDelegate`.
///
/// Thread rule: create it on its loop's thread and call it only there. The loop's thread owns lwIP,
/// whose state is global: one engine per process.
public final class TunnelEngine: TCPStackDelegate, UpstreamDelegate {
    public let configuration: TunnelConfiguration
    public weak var delegate: TunnelEventDelegate?
    public private(set) var state: TunnelState = .disconnected
    /// Split DNS's way around the tunnel for queries left to the host's resolver (`DirectDNSPath`);
    /// set it before `start()`. Without it those queries go through the relay.
    public var directDNS: DirectDNSPath?
    /// Where DNS queries from the packet flow go (`dnsResolvers`, `dnsDomains`).
    let dnsRedirect: DNSRedirect

    unowned let loop: EventLoop
    let flow: PacketFlow
    let stack: TCPStack
    /// Where flows leave: the relay's carriers, or the SOCKS5 server.
    public let upstream: Upstream
    let output: PacketOutput
    lazy var udp = UDPForwarder(engine: self)
    let reassembler = FragmentReassembler()
    var counters = EngineCounters()
    /// Destinations the relay's policy refused, logged once each.
    var refusedDestinations = RefusedDestinations()
    let rates = RateMeter()
    /// The batch the flow is read into; `dispatch(inputPacket:)` may take a packet out of it.
    let input: PacketBatch
    private var bridges: [FlowKey: FlowBridge] = [:]
    private var endOfTurn: EndOfTurnHook?
    var rateTimer: LoopTimer?
    /// Scratch for packets the engine makes itself: UDP replies, echo replies, ICMP errors.
    var scratch = [UInt8](repeating: 0, count: 65536 + 64)
    var fragmentScratch = [UInt8](repeating: 0, count: 65536)
    var nextFragmentID: UInt32 = 1

    /// Sets the engine up on `loop` (not yet started: see `start()`), with the upstream its
    /// configuration names, whose sockets `transport` makes.
    public convenience init(configuration: TunnelConfiguration, packetFlow: PacketFlow,
                            transport: any CarrierTransport = DirectCarrierTransport(), loop: EventLoop) throws(TunnelError) {
        let upstream: Upstream
        switch configuration.upstream {
        case .relays(let relays, let privateKey, let psk):
            let targets = relays.map {
                CarrierTarget(relay: $0.endpoint, relayPublicKey: $0.publicKey, privateKey: privateKey, psk: psk, transport: transport)
            }
            upstream = RelayUpstream(targets: targets, policy: configuration.relayPolicy, carriers: configuration.carriers,
                                     mux: configuration.mux, keepalive: configuration.keepalive, loop: loop)
        case .socks5(let server):
            upstream = SocksUpstream(server: server, transport: transport, window: configuration.mux.streamWindow, loop: loop)
        }
        try self.init(configuration: configuration, packetFlow: packetFlow, upstream: upstream, loop: loop)
    }

    /// Sets the engine up on `loop` with an upstream of the caller's (its configuration's
    /// `upstream` is then only what statistics show).
    public init(configuration: TunnelConfiguration, packetFlow: PacketFlow, upstream: Upstream, loop: EventLoop) throws(TunnelError) {
        if sluice_checksum_self_test() == 0 {
            Log.warning("the fast checksum routine disagreed with lwIP's reference; using the reference", "tunnel")
        }
        self.configuration = configuration
        self.loop = loop
        dnsRedirect = DNSRedirect(resolvers: configuration.dnsResolvers, domains: configuration.dnsDomains)
        flow = packetFlow
        input = PacketBatch(format: packetFlow.format)
        let output = PacketOutput(flow: packetFlow, mtu: configuration.mtu, marksDataChecksumsPartial: TCPStack.takesUnverifiedSegments)
        self.output = output
        do {
            // With segmentation offload lwIP's segments may be longer than the MTU: the flow cuts them.
            stack = try TCPStack(mtu: configuration.mtu, largeSegments: output.takesSuperPackets,
                                 dataChecksumsLeftToOutput: output.marksDataChecksumsPartial) { packet in output.emit(packet) }
        } catch {
            throw TunnelError(.setup, "\(error)", isFatal: true)
        }
        output.packetHolder = stack
        self.upstream = upstream
        stack.delegate = self
        upstream.delegate = self
    }

    /// Starts reading the packet flow and connecting the upstream. Emits `.connecting`.
    public func start() throws(TunnelError) {
        do {
            try flow.start(on: loop) { [unowned self] in self.readFlow() }
        } catch {
            throw TunnelError(.packetFlow, "\(error)", isFatal: true)
        }
        // The loop calls these two every turn: they hold the stack and the output, which `stop()`
        // lets go of with them, not the engine, whose `unowned` capture cost a retain and a release
        // of the engine at every use (callgrind on the client: about 1,100 instructions per
        // new-socket request under `Benchmarks/e2e/reqcpu.py --test udp-new --in-flight 1`).
        loop.sleepBound = { [stack] in stack.timerSleepMilliseconds }
        loop.busyPollNanoseconds = UInt64(configuration.busyPollMicroseconds) * 1_000
        endOfTurn = loop.addEndOfTurnHook { [stack, output] in
            // Segments lwIP emitted during the turn may still be held for a gathered write, and lwIP
            // will not retransmit a pcb's segments while one of its unacknowledged ones is held (its
            // retransmission timer would wait for its next tick, 500 ms on): when a timer is due,
            // they are written first. Due within a millisecond, too: lwIP counts whole milliseconds,
            // and the next one may begin between this check and `runTimers` (once in a full unit
            // test run, EngineTransferTests' held-segments test caught a timer run so).
            if stack.timerSleepMilliseconds <= 1 { output.flush() }
            stack.runTimers()
            stack.flushOutput()
            output.flush()
        }
        directDNS?.start(on: loop) { [unowned self] payload, source, application in self.emitUDP(payload, from: source, to: application) }
        scheduleRateSample()
        change(to: .connecting, .connecting)
        upstream.start()
    }

    /// Closes every flow and carrier and stops reading. Emits `.disconnected(nil)`. The engine
    /// cannot be started again.
    public func stop() {
        stop(with: nil)
    }

    private func stop(with error: TunnelError?) {
        guard state != .disconnected || endOfTurn != nil else { return }
        udp.closeAll()
        directDNS?.stop()
        upstream.stop()
        stack.flushOutput()
        stack.shutdown()
        output.flush()
        flow.stop()
        if let endOfTurn { loop.removeEndOfTurnHook(endOfTurn) }
        endOfTurn = nil
        loop.sleepBound = nil
        loop.busyPollNanoseconds = 0
        rateTimer?.cancel()
        change(to: .disconnected, .disconnected(error))
    }

    func change(to newState: TunnelState, _ event: TunnelEvent) {
        state = newState
        delegate?.tunnel(self, didEmit: event)
    }

    // MARK: reading the packet flow

    /// Reads at most about 256 packets per readiness report, so that one busy flow cannot keep the
    /// carriers' sockets waiting; a level-triggered flow reports again next turn.
    private func readFlow() {
        for _ in 0..<max(1, 256 / input.capacity) {
            input.removeAll()
            do {
                try flow.readPackets(into: input)
            } catch {
                Log.error("reading the packet flow failed: \(error); stopping", "tunnel")
                stop(with: TunnelError(.packetFlow, "\(error)", isFatal: true))
                return
            }
            if input.isEmpty { return }
            for i in 0..<input.count {
                let packet = input.packet(i)
                counters.packetsIn += 1
                counters.bytesIn += packet.count
                dispatch(inputPacket: i)
            }
        }
    }

    // MARK: TCPStackDelegate

    public func stack(_ stack: TCPStack, didReceiveSYNFor key: FlowKey) {
        let bridge = FlowBridge(key: key, engine: self)
        do {
            // DNS over TCP follows the DNS redirect like DNS over UDP; lwIP still answers as the address dialled.
            try bridge.open(via: upstream, to: dnsResolver(for: key.destination, from: key.application) ?? key.destination)
        } catch {
            Log.debug("flow \(key) refused: nothing is up to carry it (\(upstream.name))", "tunnel")
            counters.tcpRefusedNoCarrier += 1
            stack.refuse(key)
            return
        }
        bridges[key] = bridge
    }

    public func stack(_ stack: TCPStack, didAbandon key: FlowKey) { bridges[key]?.abandon() }

    public func stack(_ stack: TCPStack, didAccept flow: TCPFlow) {
        guard let bridge = bridges[flow.key] else {
            flow.abort()
            return
        }
        bridge.attach(flow)
    }

    func bridgeEnded(_ bridge: FlowBridge) {
        if bridges[bridge.key] === bridge { bridges[bridge.key] = nil }
    }

    // MARK: UpstreamDelegate

    public func upstream(_ upstream: Upstream, pathUp path: UpstreamPath, upCount: Int) {
        delegate?.tunnel(self, didEmit: .carrierUp(relay: path.relay, index: path.index))
        if state != .connected { change(to: .connected, .connected) }
    }

    public func upstream(_ upstream: Upstream, pathLost path: UpstreamPath, reason: String, upCount: Int) {
        let reason = "\(path) lost: \(reason)"
        delegate?.tunnel(self, didEmit: .error(TunnelError(.carrierLost, reason, isFatal: false, relay: path.relay)))
        if upCount == 0 && state == .connected { change(to: .reconnecting, .reconnecting(reason: reason)) }
    }

    public func upstream(_ upstream: Upstream, dialFailed path: UpstreamPath, reason: String) {
        delegate?.tunnel(self, didEmit: .error(TunnelError(.dial, "\(path): \(reason)", isFatal: false, relay: path.relay)))
    }

    public func upstream(_ upstream: Upstream, relay: String, downBecause reason: String?) {
        delegate?.tunnel(self, didEmit: reason.map { .relayDown(relay: relay, reason: $0) } ?? .relayUp(relay: relay))
    }
}
