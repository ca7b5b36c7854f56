import Glibc
import SluiceCarrier
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceSystem
import SluiceWire

/// The relay's end of one UDP association (docs/protocol.md §6): a UDP socket of its own, bound once,
/// that sends the client's datagrams to any destination and returns whatever arrives on it, from any
/// source — endpoint-independent mapping, "full cone". Loop-confined.
///
/// Datagrams to destinations wait only until the carrier read that brought them is handled
/// (`DatagramBatch`, sent with one `sendmmsg` per association and turn); beyond that nothing queues: a datagram the socket or the carrier cannot take is
/// dropped and counted.
final class AssociationLink: MuxStreamHandler, DatagramBatchSender, IdleListMember {
    let stream: MuxStream
    let client: ClientID
    /// Its client's associations on this worker, longest idle first: touched here for every datagram
    /// either way, without looking the client up. The worker keeps the list while it holds any
    /// association, so it outlives this one's membership (`RelayWorker.associationEnded`).
    unowned let idle: IdleList<AssociationLink>
    private unowned let loop: EventLoop
    private unowned let worker: RelayWorker
    private var socket: Socket?
    private var dualStack = true
    private(set) var lastActivity: UInt64
    var idleListEntry: IdleListEntry?
    private var finished = false

    init(stream: MuxStream, client: ClientID, idle: IdleList<AssociationLink>, worker: RelayWorker, loop: EventLoop) {
        self.stream = stream
        self.client = client
        self.idle = idle
        self.worker = worker
        self.loop = loop
        lastActivity = loop.now
        stream.handler = self
    }

    /// Takes the worker's socket made ahead (`UDPSocketReserve`) and accepts the association; resets
    /// it when no socket can be had.
    func start() {
        do {
            (socket, dualStack) = try worker.udpSockets.take { [unowned self] in self.handle($0) }
        } catch {
            Log.warning("client \(client): UDP association \(stream.id): \(error)", "relay")
            stream.reset(.unreachable, message: "\(error)")
            release()
            return
        }
        stream.accept()
    }

    // MARK: client -> destinations

    func stream(_ stream: MuxStream, didReceiveDatagram payload: UnsafeRawBufferPointer, endpoint: SocketEndpoint) {
        guard socket != nil else { return }
        noteActivity()
        if worker.refuseDatagram(on: self, to: endpoint) { return }
        worker.outgoingDatagrams.append(payload, to: endpoint, from: self)
    }

    // MARK: DatagramBatchSender (the batch sends this association's datagrams with one sendmmsg)

    var batchSocket: Socket? { socket }
    var batchDualStack: Bool { dualStack }

    func batch(refused packet: UnsafeMutableRawBufferPointer, to endpoint: SocketEndpoint?, code: Int32) {
        worker.counters.datagramsDroppedToDestinations += 1
        if let endpoint { report(code, info: 0, destination: endpoint) }
    }

    func batch(droppedForFullSocket count: Int) { worker.counters.datagramsDroppedToDestinations += count }

    // MARK: destinations -> client

    private func handle(_ events: IOEvents) {
        if events.contains(.error) { drainErrors() }
        if events.contains(.readable) { drainDatagrams() }
    }

    /// Reads the socket a burst at a time (`DatagramReceiver`, one `recvmmsg` for up to 32) until a
    /// burst comes back short: the socket was empty then, and edge-triggered epoll signals anew for
    /// anything that arrives after.
    private func drainDatagrams() {
        let receiver = worker.datagramReceiver
        while !finished, let socket {
            let n: Int
            do {
                guard case .done(let count) = try receiver.receive(from: socket) else { return }
                n = count
            } catch {
                // With IP_RECVERR an ICMP error surfaces here as the errno; the details are queued.
                // Any other failure, with nothing queued, ends this round instead of spinning.
                if drainErrors() == 0 {
                    Log.debug("client \(client): UDP association \(stream.id): \(error)", "relay")
                    return
                }
                continue
            }
            noteActivity()
            for i in 0..<n where !finished {
                guard let source = receiver.source(i) else { continue }
                if !stream.sendDatagram(UnsafeRawBufferPointer(receiver.packet(i)), endpoint: source) {
                    worker.counters.datagramsDroppedToClient += 1
                }
            }
            if receiver.drained { return }
        }
    }

    @discardableResult
    private func drainErrors() -> Int {
        guard let socket else { return 0 }
        var drained = 0
        while let entry = socket.readQueuedError() {
            drained += 1
            if let destination = entry.destination { report(entry.code, info: entry.info, destination: destination) }
        }
        return drained
    }

    /// Turns a socket error about a datagram to `destination` into DATAGRAM_ERROR for the client.
    private func report(_ code: Int32, info: UInt32, destination: SocketEndpoint) {
        switch code {
        case ECONNREFUSED: stream.sendDatagramError(.portUnreachable, endpoint: destination)
        case EHOSTUNREACH, ENETUNREACH: stream.sendDatagramError(.unreachable, endpoint: destination)
        case EMSGSIZE: stream.sendDatagramError(.tooBig, mtu: Int(info), endpoint: destination)
        default: Log.debug("client \(client): UDP to \(destination): \(SystemError.message(code))", "relay")
        }
    }

    private func noteActivity() {
        lastActivity = loop.now
        idle.touch(self)
    }

    // MARK: lifecycle

    /// Closes an association that was idle too long. Its RESET goes at once: the client may still
    /// hold the mapping (its timeout is its own).
    func expire(_ why: String) { close(why, evicted: false) }

    /// Closes an association evicted at the client's cap for a newer one. Its RESET goes at once
    /// unless the client was seen evicting at its own cap too (`MuxStream.evict`): then every new
    /// socket evicts one at each end, the client's RESET for it is on its way already, and one of
    /// ours per new socket would cost the client a wake-up and a read while the new socket's answer
    /// is on its way.
    func evict(_ why: String) { close(why, evicted: true) }

    private func close(_ why: String, evicted: Bool) {
        guard !finished else { return }
        Log.debug("client \(client): UDP association \(stream.id) closed: \(why)", "relay")
        if evicted { stream.evict(message: why) } else { stream.reset(.timedOut, message: why) }
        release()
    }

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) { release() }

    private func release() {
        guard !finished else { return }
        finished = true
        if let socket {
            loop.forgetBeforeClose(fd: socket.fd)
            socket.close()
        }
        socket = nil
        stream.handler = nil
        worker.associationEnded(self)
    }
}
