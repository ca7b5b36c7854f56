import SluiceIO
import SluiceLoop
import SluiceSystem

/// The socket the worker's next UDP association will use, made ahead. A new association's first
/// datagram waits for nothing but its own send: the socket's system calls — `socket`, three options
/// (`Socket.udpAnyFamily`) and the epoll registration — are made after the turn that took the last
/// one has sent its output (`EventLoop.afterOutput`), while the destination answers. That took the
/// relay's hop of a new socket's request from 33 and 39 µs to 22 and 25 (medians, two runs each,
/// `Benchmarks/e2e/hops.py --modes sluice --tests udp_new --samples 2000`), the whole round trip from
/// 127 and 148 to 117 and 120. The work still takes a CPU at that moment: on two vCPUs shared with the
/// destination, its hop grew from 13–15 to 28 µs in those runs, and requests back to back gained
/// nothing measurable (`Benchmarks/e2e/ab.py --tests udp`).
///
/// The socket made ahead is unbound (it binds at its first send, as a new one would) and registered
/// with a handler that ignores its events until `take` hands it to its association: nothing can
/// reach a socket without a port. One per worker that has opened an association, held until
/// `close`. Loop-confined.
final class UDPSocketReserve {
    /// What associations watch their sockets for.
    static let events: IOEvents = [.readable, .edgeTriggered]

    private unowned let loop: EventLoop
    private var ready: (socket: Socket, dualStack: Bool)?
    private var refillScheduled = false
    private var closed = false

    init(loop: EventLoop) { self.loop = loop }

    /// The descriptor made ahead for the next `take`, if any (for tests).
    var readyDescriptor: Int32? { ready?.socket.fd }

    /// A UDP socket, registered on the loop with `handler` for `events`: the one made ahead if there
    /// is one, else one made now. Another is made after this turn's output either way.
    func take(handler: @escaping EventLoop.Handler) throws(SystemError) -> (socket: Socket, dualStack: Bool) {
        scheduleRefill()
        if let taken = ready {
            ready = nil
            loop.replaceHandler(fd: taken.socket.fd, handler)
            return taken
        }
        return try make(handler: handler)
    }

    /// Closes the socket made ahead; makes no more.
    func close() {
        closed = true
        guard let taken = ready else { return }
        ready = nil
        loop.forgetBeforeClose(fd: taken.socket.fd)
        taken.socket.close()
    }

    private func scheduleRefill() {
        guard !refillScheduled, !closed else { return }
        refillScheduled = true
        loop.afterOutput(self)  // `runTurnAction` refills
    }

    private func make(handler: @escaping EventLoop.Handler) throws(SystemError) -> (socket: Socket, dualStack: Bool) {
        let (socket, dualStack) = try Socket.udpAnyFamily()
        try socket.closingOnFailure { () throws(SystemError) in try loop.register(fd: socket.fd, events: Self.events, handler: handler) }
        return (socket, dualStack)
    }
}

extension UDPSocketReserve: TurnAction {
    /// After the output of the turn that took the socket made ahead: makes the next one. One that
    /// cannot be made now is made by the next association's `take`, which reports the error.
    func runTurnAction() {
        refillScheduled = false
        guard !closed, ready == nil, let made = try? make(handler: { _ in }) else { return }
        ready = made
    }
}
