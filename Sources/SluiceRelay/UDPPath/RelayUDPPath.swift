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
/// it is read into one buffer and checked in place.
final class RelayUDPPath {
    /// How long one turn reads the socket before other sockets get theirs (as `Carrier` does).
    static let readSliceNanoseconds: UInt64 = 500_000

    private let socket: Socket
    /// Which indices this worker gives out, and the socket's family.
    private let place: PathSocket
    private unowned let loop: EventLoop
    private unowned let worker: RelayWorker
    private var sessions: [UInt32: PathSession] = [:]
    private let receiveBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    private let sendBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    private var readResumeScheduled = false
    private(set) var counters = PathCounters()

    /// Serves `place`'s socket (bound by the front) on `loop`, the worker's.
    init(_ place: PathSocket, worker: RelayWorker, loop: EventLoop) throws(SystemError) {
        socket = place.socket
        self.place = place
        self.worker = worker
        self.loop = loop
        socket.setReceiveBuffer(4 << 20)
        try socket.closingOnFailure { () throws(SystemError) in
            try loop.register(fd: socket.fd, events: [.readable, .edgeTriggered]) { [unowned self] _ in self.readAvailable() }
        }
    }

    deinit {
        receiveBuffer.deallocate()
        sendBuffer.deallocate()
    }

    func shutdown() {
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
        let session = PathSession(index: index, client: client, carrier: carrier, keys: keys, owner: self)
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

    /// Reads datagrams until the socket is drained or the slice is used up, then hands the
    /// datagrams bound for destinations to the batch together.
    private func readAvailable() {
        let deadline = MonotonicClock.nanoseconds() + Self.readSliceNanoseconds
        var read = 0
        while true {
            let result: IOResult<(Int, SocketEndpoint?)>
            do {
                result = try socket.receive(datagramInto: receiveBuffer)
            } catch {
                Log.debug("UDP path socket: \(error)", "relay")
                break
            }
            guard case .done(let (n, source)) = result else { break }
            if let source { handle(UnsafeMutableRawBufferPointer(rebasing: receiveBuffer[0..<n]), from: source) }
            read += 1
            if read % 32 == 0 && MonotonicClock.nanoseconds() >= deadline {
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
            if session.carrier.session.receivePathDatagram(stream: stream, endpoint: endpoint, payload: payload) {
                counters.datagramsIn += 1
            } else {
                counters.unknownStream += 1
            }
        case .probe(let opaque, let plaintextLength):
            session.maxPacket = packet.count
            answerProbe(on: session, opaque: opaque, plaintextLength: plaintextLength, to: source)
        }
    }

    // MARK: sending

    private func answerProbe(on session: PathSession, opaque: UInt64, plaintextLength: Int, to peer: SocketEndpoint) {
        let body = UnsafeMutableRawBufferPointer(rebasing: sendBuffer[PathHeader.length...])
        guard let n = PathMessage.encodeProbe(opaque: opaque, length: plaintextLength, into: body) else { return }
        if transmit(on: session, kind: .probeReply, plaintextLength: n, to: peer) != nil { counters.probesAnswered += 1 }
    }

    /// A datagram of `stream` on `session`'s path: true when it went (or was dropped for a full
    /// socket, as UDP may be), false when it is too big for the path and must go on the carrier.
    func sendDatagram(on session: PathSession, to peer: SocketEndpoint, stream: UInt32, endpoint: SocketEndpoint,
                      payload: UnsafeRawBufferPointer) -> Bool {
        let size = PathHeader.length + PathMessage.datagramOverhead(endpoint: endpoint) + payload.count + PathHeader.tagLength
        guard size <= session.maxPacket, session.sendCounter < ReplayWindow.counterLimit else {
            counters.tooBig += 1
            return false
        }
        let body = UnsafeMutableRawBufferPointer(rebasing: sendBuffer[PathHeader.length...])
        guard let n = PathMessage.encodeDatagram(stream: stream, endpoint: endpoint, payload: payload, into: body) else { return false }
        switch transmit(on: session, kind: .datagram, plaintextLength: n, to: peer) {
        case true?: counters.datagramsOut += 1
        case false?: return false
        case nil: counters.sendFailed += 1
        }
        return true
    }

    /// Seals the plaintext in `sendBuffer` and sends it: true when sent, false when the kernel
    /// refused its size (EMSGSIZE), nil when it was dropped (a full socket, an unreachable peer).
    private func transmit(on session: PathSession, kind: PathHeader.Kind, plaintextLength: Int, to peer: SocketEndpoint) -> Bool? {
        let counter = session.sendCounter
        session.sendCounter += 1
        PathHeader(kind: kind, index: session.index, counter: counter).emit(into: sendBuffer)
        let total = session.sealer.seal(sendBuffer, headerLength: PathHeader.length, plaintextLength: plaintextLength, counter: counter)
        do {
            guard case .done = try socket.send(datagram: UnsafeRawBufferPointer(rebasing: sendBuffer[0..<total]), to: peer,
                                               dualStack: place.dualStack) else { return nil }
            return true
        } catch where error.code == EMSGSIZE {
            session.maxPacket = min(session.maxPacket, total - 1)
            return false
        } catch {
            return nil
        }
    }
}
