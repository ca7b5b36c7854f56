import CSluiceShims
import Glibc
import SluiceSystem
import SluiceWire

/// UDP for the relay's associations: one dual-stack socket per association reaches IPv4 and IPv6
/// destinations alike, and reports ICMP errors through its error queue.
extension Socket {
    /// A non-blocking UDP socket on every address: IPv6 with IPv4-mapped addresses where the host
    /// has IPv6, IPv4 only otherwise. Its ephemeral port comes with its first datagram (the kernel
    /// binds an unbound socket then); until then nothing can arrive on it, so no `bind` is needed.
    public static func udpAnyFamily() throws(SystemError) -> (Socket, dualStack: Bool) {
        let flags = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        var fd = socket(AF_INET6, flags, 0)
        var dualStack = true
        if fd < 0 {
            fd = socket(AF_INET, flags, 0)
            dualStack = false
        }
        guard fd >= 0 else { throw SystemError("socket(UDP)") }
        let s = Socket(fd: fd)
        try s.closingOnFailure { () throws(SystemError) in
            if dualStack { try s.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0, "IPV6_V6ONLY") }
            guard sluice_udp_enable_errors(fd, dualStack ? AF_INET6 : AF_INET) == 0 else { throw SystemError("setsockopt(IP_RECVERR)") }
        }
        return (s, dualStack)
    }

    /// Sends one datagram; an IPv4 destination on a dual-stack socket goes as an IPv4-mapped address.
    public func send(datagram: UnsafeRawBufferPointer, to endpoint: SocketEndpoint, dualStack: Bool) throws(SystemError) -> IOResult<Int> {
        let target = dualStack ? endpoint.ipv4Mapped : endpoint
        return try syscallRetrying("sendto(\(endpoint))") {
            target.withSockaddr { Glibc.sendto(fd, datagram.baseAddress, datagram.count, Int32(MSG_NOSIGNAL), $0, $1) }
        }
    }

    /// Receives one datagram into `buffer`: its length and its source (IPv4-mapped sources unwrapped).
    public func receive(datagramInto buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<(Int, SocketEndpoint?)> {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try syscallRetrying("recvfrom") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.recvfrom(fd, buffer.baseAddress, buffer.count, 0, $0, &length)
                }
            }
        }
        switch result {
        case .wouldBlock: return .wouldBlock
        case .done(let n): return .done((n, SocketEndpoint(storage: storage)))
        }
    }

    /// One entry of the error queue: the errno, ee_info (path MTU for EMSGSIZE) and the destination
    /// of the datagram that failed; nil when the queue is empty.
    public func readQueuedError() -> (code: Int32, info: UInt32, destination: SocketEndpoint?)? {
        var entry = sluice_udp_error()
        guard sluice_udp_read_error(fd, &entry) == 1 else { return nil }
        return (entry.error, entry.info, SocketEndpoint(storage: entry.offender_destination))
    }
}

extension SocketEndpoint {
    /// `::ffff:a.b.c.d` for an IPv4 endpoint; IPv6 endpoints unchanged.
    public var ipv4Mapped: SocketEndpoint {
        guard case .v4(let a) = address else { return self }
        return SocketEndpoint(address: .v6(0, 0xFFFF_0000_0000 | UInt64(a)), port: port)
    }
}

extension Socket {
    /// A non-blocking, close-on-exec UDP socket for `family`'s address, unbound.
    public static func udp(for address: IPAddress) throws(SystemError) -> Socket {
        let flags = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(address.isIPv4 ? AF_INET : AF_INET6, flags, 0)
        guard fd >= 0 else { throw SystemError("socket(UDP)") }
        return Socket(fd: fd)
    }
}

extension Socket {
    /// Binds to `endpoint` (port 0: the kernel picks one).
    public func bind(to endpoint: SocketEndpoint) throws(SystemError) {
        let r = endpoint.withSockaddr { Glibc.bind(fd, $0, $1) }
        guard r == 0 else { throw SystemError("bind(\(endpoint))") }
    }
}

extension Socket {
    /// A non-blocking UDP socket bound to `endpoint`; on an IPv6 address it takes IPv4 as well
    /// (`[::]:7000` serves both, as `listen(on:)` does for TCP). The relay's UDP path socket.
    /// With `reusePort` it joins the SO_REUSEPORT group of sockets the same user bound there
    /// (socket(7)), among which the kernel spreads datagrams (`steerReusePortGroup`).
    public static func udpBound(on endpoint: SocketEndpoint, reusePort: Bool = false) throws(SystemError) -> Socket {
        let s = try udp(for: endpoint.address)
        try s.closingOnFailure { () throws(SystemError) in
            if !endpoint.address.isIPv4 { try s.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0, "IPV6_V6ONLY") }
            if reusePort { try s.setOption(SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT") }
            let r = endpoint.withSockaddr { Glibc.bind(s.fd, $0, $1) }
            guard r == 0 else {
                let code = errno
                throw SystemError("bind(UDP \(endpoint))", code: code, hint: code == EADDRINUSE ? "another process holds this UDP port" : nil)
            }
        }
        return s
    }

    /// The path MTU the kernel holds for a connected socket's peer (`IP_MTU`, `IPV6_MTU`): the
    /// route's MTU until an ICMP "too big" lowers it. Nil when it cannot say (not connected).
    public func pathMTU(ipv4: Bool) -> Int? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        let r = ipv4 ? getsockopt(fd, Int32(IPPROTO_IP), IP_MTU, &value, &length)
            : getsockopt(fd, Int32(IPPROTO_IPV6), IPV6_MTU, &value, &length)
        return r == 0 && value > 0 ? Int(value) : nil
    }

    /// Makes the kernel give each datagram of this socket's SO_REUSEPORT group to the socket whose
    /// place in the group (the order they were bound, from 0) is the big-endian u32 at `offset` of
    /// the datagram modulo `groups` (the group's size); a datagram too short to hold it goes to the
    /// first. A classic BPF program (SO_ATTACH_REUSEPORT_CBPF), written in `sluice_reuseport_steer_by_u32`.
    public func steerReusePortGroup(byU32At offset: Int, groups: Int) throws(SystemError) {
        guard sluice_reuseport_steer_by_u32(fd, UInt32(offset), UInt32(groups)) == 0 else {
            throw SystemError("setsockopt(SO_ATTACH_REUSEPORT_CBPF)")
        }
    }

    /// Asks for a receive buffer of `bytes` (the kernel caps it at net.core.rmem_max), so that a
    /// burst of datagrams waits in the socket instead of being dropped while the loop is busy.
    public func setReceiveBuffer(_ bytes: Int32) { try? setOption(SOL_SOCKET, SO_RCVBUF, bytes, "SO_RCVBUF") }
}
