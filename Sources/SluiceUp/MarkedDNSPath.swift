import SluiceHost
import SluiceIO
import SluiceLog
import SluiceLoop
import SluiceSystem
import SluiceTunnel
import SluiceWire

/// `sluice up`'s `DirectDNSPath`: UDP sockets carrying the carriers' firewall mark, which the policy rule
/// `fwmark M lookup main` sends by the host's own routes (never into the TUN and past Sluice's DNS
/// capture rules); one socket per application endpoint, like a UDP mapping, closed after 10 s idle.
/// Whether an address bypasses the tunnel is asked of the kernel (`ip route get ADDRESS`, without
/// mark, so as the host would route it without the capture) and remembered until the network changes.
///
/// Only UDP: TCP to port 53 is not captured in split mode (SluiceHost's `HostSetup+DNS.swift`). With
/// `--kill-switch` these queries are rejected like any other traffic outside the tunnel. On the
/// engine's loop thread.
final class MarkedDNSPath: DirectDNSPath {
    static let idleMilliseconds: UInt64 = 10_000
    static let maxSockets = 256

    private final class Mapping: IdleListMember {
        let application: SocketEndpoint
        let socket: Socket
        let dualStack: Bool
        var lastActivity: UInt64 = 0
        var idleListEntry: IdleListEntry?
        init(application: SocketEndpoint, socket: Socket, dualStack: Bool) {
            self.application = application
            self.socket = socket
            self.dualStack = dualStack
        }
    }

    /// `unowned`, not `weak`, as TunPacketFlow's: a weak reference would slow every use of the loop.
    private unowned var loop: EventLoop?
    private let fwmark: UInt32
    private let tunName: String
    private let netlink: NetlinkSocket
    /// What `bypassesTunnel` learnt, per address, until `routesChanged`.
    private var bypasses: [IPAddress: Bool] = [:]
    private var mappings: [SocketEndpoint: Mapping] = [:]
    private let idle = IdleList<Mapping>()
    private var sweepTimer: LoopTimer?
    private var buffer = [UInt8](repeating: 0, count: 65536)
    /// Writes an answer `payload` from `source` toward `application` (the engine's, from `start`).
    private var answer: ((_ payload: UnsafeRawBufferPointer, _ source: SocketEndpoint, _ application: SocketEndpoint) -> Void)?

    init(fwmark: UInt32, tunName: String) throws(HostError) {
        self.fwmark = fwmark
        self.tunName = tunName
        netlink = try NetlinkSocket()
    }

    func start(on loop: EventLoop, answer: @escaping (UnsafeRawBufferPointer, SocketEndpoint, SocketEndpoint) -> Void) {
        self.loop = loop
        self.answer = answer
    }

    func bypassesTunnel(_ address: IPAddress) -> Bool {
        if let known = bypasses[address] { return known }
        let around: Bool
        do throws(HostError) {
            around = try netlink.lookupRoute(to: address).interface != tunName
        } catch {
            // No route at all: the relay is the only chance.
            Log.debug("split DNS: no route to \(address) outside the tunnel (\(error)); its queries go through the relay", "client")
            around = false
        }
        bypasses[address] = around
        return around
    }

    /// The network changed (`NetworkWatch`): what `bypassesTunnel` learnt may be stale.
    func routesChanged() { bypasses.removeAll() }

    func send(_ payload: UnsafeRawBufferPointer, from application: SocketEndpoint, to destination: SocketEndpoint) -> Bool {
        guard let loop, let mapping = mappings[application] ?? open(for: application, on: loop) else { return false }
        mapping.lastActivity = loop.now
        idle.touch(mapping)
        guard case .done? = try? mapping.socket.send(datagram: payload, to: destination, dualStack: mapping.dualStack) else { return false }
        return true
    }

    func stop() {
        for mapping in mappings.values { drop(mapping) }
        sweepTimer?.cancel()
        answer = nil
    }

    private func open(for application: SocketEndpoint, on loop: EventLoop) -> Mapping? {
        if mappings.count >= Self.maxSockets, let oldest = idle.oldest { drop(oldest) }
        let mapping: Mapping
        do {
            let (socket, dualStack) = try Socket.udpAnyFamily()
            try socket.closingOnFailure { () throws(HostError) in try SocketMark.set(fwmark, on: socket.fd) }
            mapping = Mapping(application: application, socket: socket, dualStack: dualStack)
            try socket.closingOnFailure { () throws(SystemError) in
                try loop.register(fd: socket.fd, events: [.readable]) { [unowned self, unowned mapping] _ in self.receive(on: mapping) }
            }
        } catch {
            Log.warning("split DNS: no socket for a query around the tunnel: \(error)", "client")
            return nil
        }
        mappings[application] = mapping
        scheduleSweep(on: loop)
        return mapping
    }

    private func receive(on mapping: Mapping) {
        while true {
            let result = buffer.withUnsafeMutableBytes { try? mapping.socket.receive(datagramInto: $0) }
            guard case .done(let (count, source))? = result, let source else {
                while mapping.socket.readQueuedError() != nil {}  // ICMP errors: the application times out as it would
                return
            }
            mapping.lastActivity = loop?.now ?? 0
            idle.touch(mapping)
            buffer.withUnsafeBytes { answer?(UnsafeRawBufferPointer(rebasing: $0[0..<count]), source, mapping.application) }
        }
    }

    private func drop(_ mapping: Mapping) {
        loop?.deregister(fd: mapping.socket.fd)
        mapping.socket.close()
        mappings[mapping.application] = nil
        idle.remove(mapping)
    }

    private func scheduleSweep(on loop: EventLoop) {
        guard sweepTimer?.isPending != true else { return }
        sweepTimer = loop.schedule(afterMilliseconds: 1000) { [weak self] in
            guard let self else { return }
            let now = loop.now
            while let oldest = self.idle.oldest, now - oldest.lastActivity >= Self.idleMilliseconds { self.drop(oldest) }
            if !self.mappings.isEmpty { self.scheduleSweep(on: loop) }
        }
    }
}
