import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceSystem

/// The UDP sockets of a worker's new associations, made and bound ahead of need, and the sockets of
/// ended ones, closed after the loop turn: neither costs the request that opens an association.
///
/// Why: a new association's first datagram waited for `socket`, three `setsockopt`s, and the port
/// the kernel binds on a socket's first send; at the client's mapping cap it also waited for the
/// `close` of the association evicted for it. Alone, in a C loop on this VM, those are 3–4, 1.1–1.4,
/// 6–9 and 3.7–5 µs — about 15–20 µs of a new UDP socket's round trip through the tunnel, where the
/// bench measures 190–200 µs. A ready socket has its port already (`udpAnyFamilyBound`); it is
/// registered with the loop only when an association takes it, so what arrived on it before is
/// dropped then (`discardQueuedDatagrams`: nobody was told the port, nothing is lost). While the
/// worker has no association, it keeps no socket ready either.
///
/// Loop-confined, like the worker.
final class AssociationSockets {
    /// Sockets kept ready. A burst of new associations takes more; the rest are made on the spot.
    static let readyCount = 4

    private unowned let loop: EventLoop
    /// Bound sockets no association has yet; the next `take` pops the last.
    private(set) var ready: [(socket: Socket, dualStack: Bool)] = []
    private var retired: [Socket] = []
    /// Sockets taken and not retired yet: the worker's associations.
    private var inUse = 0
    private var tidyingScheduled = false
    private var stopped = false

    /// Makes nothing yet: the first association's `take` starts keeping sockets ready, so a relay
    /// that carries no UDP holds none.
    init(loop: EventLoop) { self.loop = loop }

    /// A bound socket for a new association: a ready one, else one made now.
    func take() throws(SystemError) -> (Socket, dualStack: Bool) {
        scheduleTidying()
        let taken: (Socket, dualStack: Bool)
        if let (socket, dualStack) = ready.popLast() {
            socket.discardQueuedDatagrams()
            taken = (socket, dualStack)
        } else {
            taken = try Socket.udpAnyFamilyBound()
        }
        inUse += 1
        return taken
    }

    /// Closes an ended association's socket at the end of this loop turn. Its handler must be gone
    /// (`EventLoop.forgetBeforeClose`); closing removes it from epoll.
    func retire(_ socket: Socket) {
        inUse -= 1
        guard !stopped else { return socket.close() }
        retired.append(socket)
        scheduleTidying()
    }

    /// Closes every socket, ready or retired (worker shutdown).
    func shutdown() {
        stopped = true
        for socket in retired { socket.close() }
        for entry in ready { entry.socket.close() }
        retired.removeAll()
        ready.removeAll()
    }

    private func scheduleTidying() {
        guard !tidyingScheduled, !stopped else { return }
        tidyingScheduled = true
        // Strong capture: the worker, which owns this, lives as long as its loop.
        loop.afterTurn { self.tidy() }
    }

    private func tidy() {
        tidyingScheduled = false
        for socket in retired { socket.close() }
        retired.removeAll(keepingCapacity: true)
        guard !stopped else { return }
        if inUse == 0 {
            for entry in ready { entry.socket.close() }
            ready.removeAll()
            return
        }
        while ready.count < Self.readyCount {
            do {
                ready.append(try Socket.udpAnyFamilyBound())
            } catch {
                Log.debug("a UDP socket for later associations: \(error)", "relay")
                return
            }
        }
    }
}
