import Glibc
import SluiceCarrier
import SluiceCrypto
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSystem
import SluiceWire

/// The client's end of one carrier's UDP path (docs/protocol.md §8): a UDP socket connected to the
/// relay's carrier address (made by the `CarrierTransport`, so `sluice up` marks it like the
/// carriers), the path's keys, counter and replay window, and the `UDPPathMonitor` that says when
/// it carries datagrams. Made when the relay offers the path (UDP_PATH) and gone with its carrier.
/// Loop-confined.
///
/// Datagrams of the carrier's open associations are offered here first (`MuxDatagramPath`); while
/// the path is not up, or a datagram is larger than the path carries, it refuses them and they ride
/// the carrier as before, so nothing is ever dropped for the path's sake.
///
/// Packets go out a batch per loop turn (`DatagramBatch`: one `sendmmsg`, each packet sealed where
/// it is sent from) and come in a burst per system call (`DatagramReceiver`: one `recvmmsg`).
final class UDPPathClient: CarrierUDPPath, MuxDatagramPath, DatagramBatchSender, PathBundleSealer {
    let index: UInt32
    private unowned let carrier: Carrier
    private unowned let loop: EventLoop
    private unowned let report: UDPPathReport
    private let socket: Socket
    private let ipv4: Bool
    private let sealer: PathCipher
    private let opener: PathCipher
    private var window = ReplayWindow()
    private var sendCounter: UInt64 = 0
    private(set) var monitor: UDPPathMonitor
    private var timer: LoopTimer?
    private var readResumeScheduled = false
    private var closed = false
    /// The largest packet the path takes: the kernel's path MTU to the relay less the IP and UDP
    /// headers. Probes are padded to it, so a validated path has carried that size.
    private(set) var maxPacket: Int
    /// The round trip of the newest answered probe, in microseconds.
    private(set) var roundTripMicroseconds: Int?
    /// The turn's outgoing packets: 64 KiB, the largest packet, so it never refuses one.
    private let outgoing: DatagramBatch
    private let receiver = DatagramReceiver(slots: 16)
    /// Datagrams of this turn not yet sealed, where bundles are in effect.
    private let pending: PathBundle

    /// Packets one turn reads before the loop's other sockets get theirs.
    static let readsPerTurn = 256

    init(carrier: Carrier, index: UInt32, keys: PathKeys, relay: SocketEndpoint, transport: any CarrierTransport,
         loop: EventLoop, report: UDPPathReport) throws(SystemError) {
        self.carrier = carrier
        self.index = index
        self.loop = loop
        self.report = report
        outgoing = DatagramBatch(loop: loop, limit: 65_536)
        pending = PathBundle(loop: loop)
        sealer = PathCipher(key: keys.sending)
        opener = PathCipher(key: keys.receiving)
        ipv4 = relay.address.isIPv4
        let socket = try transport.udpSocket(for: relay.address)
        try socket.closingOnFailure { () throws(SystemError) in
            try socket.connect(to: relay)
            socket.setReceiveBuffer(4 << 20)
            DatagramReceiver.enableCoalescing(on: socket)  // the relay's GSO sends arrive as one skb
        }
        self.socket = socket
        maxPacket = 0
        monitor = UDPPathMonitor(now: loop.now)
        refreshMaxPacket()
        try socket.closingOnFailure { () throws(SystemError) in
            try loop.register(fd: socket.fd, events: [.readable, .edgeTriggered]) { [unowned self] _ in self.readAvailable() }
        }
    }

    /// Starts validating: the first probe goes out now.
    func start() { tick() }

    var state: UDPPathMonitor.State { monitor.state }

    // MARK: CarrierUDPPath

    func carrierDidClose() {
        guard !closed else { return }
        closed = true
        timer?.cancel()
        loop.forgetBeforeClose(fd: socket.fd)
        socket.close()
        report.pathEnded(self)
    }

    // MARK: MuxDatagramPath

    func send(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer) -> Bool {
        guard monitor.state == .up, !closed else {
            report.counters.overCarrier += 1
            return false
        }
        let size = PathHeader.length + PathMessage.datagramOverhead(endpoint: endpoint) + payload.count + PathHeader.tagLength
        guard size <= maxPacket, sendCounter < ReplayWindow.counterLimit else {
            report.counters.tooBig += 1
            return false
        }
        if carrier.session.features.contains(.udpPathBundles) {
            pending.add(stream: stream, endpoint: endpoint, payload: payload, maxPacket: maxPacket, sealer: self)
        } else {
            guard queue(.datagram, size: size, body: { PathMessage.encodeDatagram(stream: stream, endpoint: endpoint, payload: payload, into: $0) })
            else { return false }
            report.counters.packetsOut += 1
        }
        monitor.sentDatagram(now: loop.now)
        report.counters.datagramsOut += 1
        report.counters.bytesOut += payload.count
        return true
    }

    /// A datagram that opens its association is in this turn's packets: they go now, before the
    /// carrier writes the OPEN (the bundle and the batch, empty then, still close the turn).
    func sendHeld() {
        seal(pending)
        outgoing.flush()
    }

    // MARK: sending

    /// PathBundleSealer: the turn's gathered datagrams as one packet into the batch (none once closed).
    func seal(_ bundle: PathBundle) {
        guard !bundle.isEmpty else { return }
        guard !closed else { return bundle.removeAll() }
        if queue(bundle.kind, size: PathHeader.length + bundle.plaintextLength + PathHeader.tagLength, body: { bundle.take(into: $0) }) {
            report.counters.packetsOut += 1
        }
    }

    /// Seals a packet of `kind` under the next counter into the turn's batch; false when `body`
    /// wrote none.
    private func queue(_ kind: PathHeader.Kind, size: Int, body: (UnsafeMutableRawBufferPointer) -> Int?) -> Bool {
        var queued = false
        outgoing.append(to: nil, from: self, reserving: size) { room in
            guard let n = PathPacket.seal(into: room, kind: kind, index: index, counter: sendCounter, sealer: sealer, body: body) else { return nil }
            sendCounter += 1
            queued = true
            return n
        }
        return queued
    }

    private func sendProbe() {
        refreshMaxPacket()
        let length = maxPacket - PathHeader.length - PathHeader.tagLength
        if queue(.probe, size: maxPacket, body: { PathMessage.encodeProbe(opaque: MonotonicClock.nanoseconds(), length: length, into: $0) }) {
            report.counters.probesSent += 1
        }
    }

    // MARK: DatagramBatchSender

    var batchSocket: Socket? { closed ? nil : socket }
    var batchDualStack: Bool { false }  // connected: packets go to the relay, no address given
    /// Equal-sized packets of one turn leave as one UDP GSO send (DatagramBatch), until the
    /// kernel says this route cannot segment.
    var batchSegmentation = true

    /// A packet the kernel refused: as before batching, the datagrams in it go on the carrier
    /// instead, whatever the reason (EMSGSIZE: the path MTU fell; an ICMP error or a local
    /// firewall's EPERM) — the path accepted it, so it must not be lost for the path's sake.
    func batch(refused packet: UnsafeMutableRawBufferPointer, to endpoint: SocketEndpoint?, code: Int32) {
        if code == EMSGSIZE {
            refreshMaxPacket()  // an ICMP "too big" lowered the kernel's path MTU
        } else {
            report.counters.sendFailed += 1
            // An ICMP error of an earlier packet surfaces here as well as on a read: the relay does
            // not take UDP there. Anything else costs this packet only; the probes decide whether
            // the path still works.
            if code == ECONNREFUSED || code == EHOSTUNREACH || code == ENETUNREACH { pathBroke(SystemError.message(code)) }
        }
        let refused = PathPacket.carryRefused(packet, sealer: sealer, on: carrier.session)
        if refused.datagrams > 0 { report.counters.packetsOut -= 1 }
        report.counters.datagramsOut -= refused.carried
        if code == EMSGSIZE { report.counters.tooBig += refused.carried }
    }

    /// A full send buffer drops the rest of the turn's packets, as a UDP socket does: a datagram
    /// held for a later turn would arrive late, and the path is for traffic that would rather lose it.
    func batch(droppedForFullSocket count: Int) { report.counters.socketFull += count }

    private func refreshMaxPacket() {
        let headers = ipv4 ? 20 + 8 : 40 + 8
        let mtu = socket.pathMTU(ipv4: ipv4) ?? 1280
        maxPacket = max(PathHeader.minimumPacket, min(mtu, 65_535) - headers)
    }

    // MARK: the monitor

    private func tick() {
        guard !closed else { return }
        let decision = monitor.tick(now: loop.now, active: carrier.session.associationCount > 0)
        if decision.probe { sendProbe() }
        if let change = decision.change { apply(change) }
        timer?.cancel()
        let now = loop.now
        // Strong capture, cancelled in carrierDidClose (see EventLoop.schedule on weak captures).
        timer = loop.schedule(afterMilliseconds: decision.nextTick > now ? decision.nextTick - now : 0) { self.tick() }
    }

    private func apply(_ change: UDPPathMonitor.Change) {
        switch change {
        case .validated:
            carrier.session.useUDPPath(true)
        case .lost(let wasUp, _):
            if wasUp { carrier.session.useUDPPath(false) }
        }
        report.path(self, on: carrier, changed: change)
    }

    private func pathBroke(_ why: String) {
        if let change = monitor.failed(now: loop.now, why: why) { apply(change) }
    }

    // MARK: receiving

    /// Reads bursts (one `recvmmsg` each) until one comes back short, so the socket was empty then
    /// and edge-triggered epoll signals again for anything later, or the turn's share is read.
    private func readAvailable() {
        var reads = 0
        while !closed {
            let n: Int
            do {
                guard case .done(let count) = try receiver.receive(from: socket) else { return }
                n = count
            } catch {
                // ICMP port or host unreachable for an earlier packet: the relay does not take UDP here.
                report.counters.icmpErrors += 1
                pathBroke("\(error)")
                reads += 1
                if reads >= Self.readsPerTurn { return }
                continue
            }
            for i in 0..<n where !closed { handle(receiver.packet(i)) }
            reads += n
            if receiver.drained { return }
            if reads >= Self.readsPerTurn {
                readInNextTurn()
                return
            }
        }
    }

    /// Edge-triggered: the socket will not say again that it holds packets.
    private func readInNextTurn() {
        guard !readResumeScheduled else { return }
        readResumeScheduled = true
        loop.schedule(afterMilliseconds: 0) {  // strong: `closed` stops it after carrierDidClose
            self.readResumeScheduled = false
            self.readAvailable()
        }
    }

    private func handle(_ packet: UnsafeMutableRawBufferPointer) {
        let header: PathHeader
        do {
            header = try PathHeader(parsing: UnsafeRawBufferPointer(packet))
        } catch {
            report.counters.malformed += 1
            return
        }
        guard header.index == index, header.kind != .probe,
              header.kind != .bundle || carrier.session.features.contains(.udpPathBundles) else {
            report.counters.malformed += 1
            return
        }
        guard window.wouldAccept(header.counter) else {
            report.counters.replayed += 1
            return
        }
        guard let length = opener.open(packet, headerLength: PathHeader.length, counter: header.counter) else {
            report.counters.unauthenticated += 1
            return
        }
        guard window.accept(header.counter) else {
            report.counters.replayed += 1
            return
        }
        let now = loop.now
        monitor.received(now: now)
        let plaintext = UnsafeRawBufferPointer(rebasing: packet[PathHeader.length..<PathHeader.length + length])
        let message: PathMessage
        do {
            message = try PathMessage.decode(header.kind, plaintext)
        } catch {
            report.counters.malformed += 1
            return
        }
        switch message {
        case .datagram(let stream, let endpoint, let payload):
            report.counters.packetsIn += 1
            deliver(stream: stream, endpoint: endpoint, payload: payload)
        case .bundle(let entries):
            report.counters.packetsIn += 1
            for entry in entries { deliver(stream: entry.stream, endpoint: entry.endpoint, payload: entry.payload) }
        case .probe(let opaque, _):
            let sent = MonotonicClock.nanoseconds()
            roundTripMicroseconds = sent >= opaque ? Int((sent - opaque) / 1_000) : 0
            report.counters.probesAnswered += 1
            if let change = monitor.answered(sentAt: opaque / 1_000_000, now: now) { apply(change) }
        }
    }

    private func deliver(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer) {
        if carrier.session.receivePathDatagram(stream: stream, endpoint: endpoint, payload: payload) {
            report.counters.datagramsIn += 1
            report.counters.bytesIn += payload.count
        } else {
            report.counters.unknownStream += 1
        }
    }
}
