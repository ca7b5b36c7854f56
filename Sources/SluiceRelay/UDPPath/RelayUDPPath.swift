import Glibc
import SluiceCarrier
import SluiceCrypto
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSystem
import SluiceWire

/// One worker's side of the UDP path (docs/protocol.md §8), owned by its `RelayWorker` and touched
/// by nothing else: its UDP socket on the carrier listener's address and port (`PathSocket`: the
/// kernel gives it the packets whose index is of this worker's class), the `PathSession` of each
/// of the worker's carriers whose client took the feature, by index, and the counters
/// `sluice status --relay` shows (summed over workers). Loop-confined, on the worker's loop.
///
/// A packet that does not authenticate — unknown index, a replayed or stale counter, a tag that
/// does not verify, a malformed header — is counted and dropped: no answer, and no allocation, since
/// it is read into its slot and checked in place.
///
/// Packets come in a burst per system call (`DatagramReceiver`, `recvmmsg`) and go out a batch per
/// loop turn (`DatagramBatch`, `sendmmsg`), sealed where they are sent from.
final class RelayUDPPath: DatagramBatchSender {
    /// How long one turn reads the socket before other sockets get theirs (as `Carrier` does).
    static let readSliceNanoseconds: UInt64 = 500_000

    private let socket: Socket
    /// Which indices this worker gives out, and the socket's family.
    private let place: PathSocket
    private unowned let loop: EventLoop
    private unowned let worker: RelayWorker
    private var sessions: [UInt32: PathSession] = [:]
    private let receiver = DatagramReceiver()
    private let outgoing: DatagramBatch
    private var readResumeScheduled = false
    private var isShutDown = false
    private(set) var counters = PathCounters()

    /// Serves `place`'s socket (bound by the front) on `loop`, the worker's.
    init(_ place: PathSocket, worker: RelayWorker, loop: EventLoop) throws(SystemError) {
        socket = place.socket
        self.place = place
        self.worker = worker
        self.loop = loop
        outgoing = DatagramBatch(loop: loop)
        socket.setReceiveBuffer(4 << 20)
        DatagramReceiver.enableCoalescing(on: socket)  // the clients' GSO sends arrive as one skb
        try socket.closingOnFailure { () throws(SystemError) in
            try loop.register(fd: socket.fd, events: [.readable, .edgeTriggered]) { [unowned self] _ in self.readAvailable() }
        }
    }

    func shutdown() {
        isShutDown = true
        loop.deregister(fd: socket.fd)
        socket.close()
        sessions.removeAll()
    }

    // MARK: sessions

    /// Gives `carrier` a UDP path and offers it to the client (UDP_PATH): its HELLO put the feature
    /// in effect.
    func open(for carrier: Carrier, client: ClientID) {
        guard let keys = carrier.pathKeys, carrier.udpPath == nil else { return }
        let index = place.newIndex { sessions[$0] != nil }
        let session = PathSession(index: index, client: client, carrier: carrier, keys: keys, owner: self, loop: loop)
        sessions[index] = session
        counters.sessions += 1
        carrier.udpPath = session
        carrier.session.datagramPath = session
        carrier.session.offerUDPPath(index: index)
    }

    func remove(_ session: PathSession) {
        if sessions[session.index] === session { sessions[session.index] = nil }
    }

    // MARK: receiving

    /// Reads bursts of datagrams until one comes back short (the socket was empty then) or the
    /// slice is used up, then hands the datagrams bound for destinations to the batch together.
    private func readAvailable() {
        let deadline = MonotonicClock.nanoseconds() + Self.readSliceNanoseconds
        while true {
            let n: Int
            do {
                guard case .done(let count) = try receiver.receive(from: socket) else { break }
                n = count
            } catch {
                Log.debug("UDP path socket: \(error)", "relay")
                break
            }
            for i in 0..<n {
                if let source = receiver.source(i) { handle(receiver.packet(i), from: source) }
            }
            if receiver.drained { break }
            if MonotonicClock.nanoseconds() >= deadline {
                readInNextTurn()
                break
            }
        }
        worker.outgoingDatagrams.flush()
    }

    /// Edge-triggered: the socket will not say again that it holds datagrams.
    private func readInNextTurn() {
        guard !readResumeScheduled else { return }
        readResumeScheduled = true
        loop.schedule(afterMilliseconds: 0) {  // strong: the worker lives as long as its loop
            self.readResumeScheduled = false
            self.readAvailable()
        }
    }

    private func handle(_ packet: UnsafeMutableRawBufferPointer, from source: SocketEndpoint) {
        let header: PathHeader
        do {
            header = try PathHeader(parsing: UnsafeRawBufferPointer(packet))
        } catch {
            counters.malformed += 1
            return
        }
        guard let session = sessions[header.index] else {
            counters.unknownIndex += 1
            return
        }
        guard header.kind != .bundle || session.carrier.session.features.contains(.udpPathBundles) else {
            counters.malformed += 1  // a BUNDLE where the client did not offer bit 2
            return
        }
        guard session.window.wouldAccept(header.counter) else {
            counters.replayed += 1
            return
        }
        guard let length = session.opener.open(packet, headerLength: PathHeader.length, counter: header.counter) else {
            counters.unauthenticated += 1
            return
        }
        guard session.window.accept(header.counter) else {
            counters.replayed += 1
            return
        }
        counters.packetsIn += 1
        if session.peer != source {
            if let old = session.peer {
                counters.roamed += 1
                Log.info("carrier \(session.carrier.label): UDP path moved from \(old) to \(source)", "relay")
            } else {
                Log.debug("carrier \(session.carrier.label): UDP path from \(source)", "relay")
            }
            session.peer = source
        }
        let plaintext = UnsafeRawBufferPointer(rebasing: packet[PathHeader.length..<PathHeader.length + length])
        let message: PathMessage
        do {
            guard header.kind != .probeReply else { throw PathPacketError.unknownKind(header.kind.rawValue) }
            message = try PathMessage.decode(header.kind, plaintext)
        } catch {
            counters.malformed += 1
            return
        }
        switch message {
        case .datagram(let stream, let endpoint, let payload):
            deliver(on: session, stream: stream, endpoint: endpoint, payload: payload)
        case .bundle(let entries):
            for entry in entries { deliver(on: session, stream: entry.stream, endpoint: entry.endpoint, payload: entry.payload) }
        case .probe(let opaque, let plaintextLength):
            session.maxPacket = packet.count
            answerProbe(on: session, opaque: opaque, plaintextLength: plaintextLength, to: source)
        }
    }

    private func deliver(on session: PathSession, stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer) {
        let mux = session.carrier.session
        let opened = mux.associationsOpenedByPath
        if mux.receivePathDatagram(stream: stream, endpoint: endpoint, payload: payload) {
            counters.datagramsIn += 1
        } else {
            counters.unknownStream += 1
        }
        counters.opens += mux.associationsOpenedByPath - opened
    }

    // MARK: sending

    private func answerProbe(on session: PathSession, opaque: UInt64, plaintextLength: Int, to peer: SocketEndpoint) {
        let size = PathHeader.length + plaintextLength + PathHeader.tagLength
        if queue(on: session, kind: .probeReply, size: size, to: peer, body: { PathMessage.encodeProbe(opaque: opaque, length: plaintextLength, into: $0) }) {
            counters.probesAnswered += 1
        }
    }

    /// A datagram of `stream` on `session`'s path: true when the path took it (it goes out with the
    /// turn's batch), false when it is too big for the path and must go on the carrier.
    func sendDatagram(on session: PathSession, to peer: SocketEndpoint, stream: UInt32, endpoint: SocketEndpoint,
                      payload: UnsafeRawBufferPointer) -> Bool {
        let size = PathHeader.length + PathMessage.datagramOverhead(endpoint: endpoint) + payload.count + PathHeader.tagLength
        guard size <= session.maxPacket, session.sendCounter < ReplayWindow.counterLimit else {
            counters.tooBig += 1
            return false
        }
        if session.carrier.session.features.contains(.udpPathBundles) {
            session.pending.add(stream: stream, endpoint: endpoint, payload: payload, maxPacket: session.maxPacket, sealer: session)
        } else {
            guard queue(on: session, kind: .datagram, size: size, to: peer, body: {
                PathMessage.encodeDatagram(stream: stream, endpoint: endpoint, payload: payload, into: $0)
            }) else { return false }
            counters.packetsOut += 1
        }
        counters.datagramsOut += 1
        return true
    }

    /// A session's gathered datagrams (`PathBundle`) as one packet to the client's newest address;
    /// none once the session or the worker closed.
    func seal(_ pending: PathBundle, of session: PathSession) {
        guard !pending.isEmpty else { return }
        guard !session.closed, !isShutDown, let peer = session.peer else { return pending.removeAll() }
        if queue(on: session, kind: pending.kind, size: PathHeader.length + pending.plaintextLength + PathHeader.tagLength, to: peer,
                 body: { pending.take(into: $0) }) {
            counters.packetsOut += 1
        }
    }

    /// Seals a packet of `kind` under the session's next counter into the turn's batch.
    private func queue(on session: PathSession, kind: PathHeader.Kind, size: Int, to peer: SocketEndpoint,
                       body: (UnsafeMutableRawBufferPointer) -> Int?) -> Bool {
        var queued = false
        outgoing.append(to: peer, from: self, reserving: size) { room in
            let counter = session.sendCounter
            guard let n = PathPacket.seal(into: room, kind: kind, index: session.index, counter: counter, sealer: session.sealer, body: body) else { return nil }
            session.sendCounter += 1
            queued = true
            return n
        }
        return queued
    }

    // MARK: DatagramBatchSender

    var batchSocket: Socket? { isShutDown ? nil : socket }
    var batchDualStack: Bool { place.dualStack }
    /// Equal-sized packets of one turn to one client leave as one UDP GSO send (DatagramBatch),
    /// until the kernel says this socket's route cannot segment.
    var batchSegmentation = true

    /// EMSGSIZE: the packet's session learns the size and its datagrams go on the carrier; anything
    /// else (an unreachable peer) costs this packet only.
    func batch(refused packet: UnsafeMutableRawBufferPointer, to endpoint: SocketEndpoint?, code: Int32) {
        counters.sendFailed += 1
        guard code == EMSGSIZE, let header = try? PathHeader(parsing: UnsafeRawBufferPointer(packet)),
              let session = sessions[header.index] else { return }
        session.maxPacket = min(session.maxPacket, packet.count - 1)
        let refused = PathPacket.carryRefused(packet, sealer: session.sealer, on: session.carrier.session)
        if refused.datagrams > 0 { counters.packetsOut -= 1 }
        counters.datagramsOut -= refused.carried
        counters.tooBig += refused.carried
    }

    func batch(droppedForFullSocket count: Int) { counters.sendFailed += count }
}
