import CSluiceShims
import Glibc
import SluiceSystem
import SluiceWire

/// A non-blocking TCP socket fd and the few operations the carrier and the relay need. The owner
/// closes it (`close()`); every call goes through `syscallRetrying`.
public struct Socket: Sendable {
    public let fd: Int32

    public init(fd: Int32) { self.fd = fd }

    /// A new non-blocking, close-on-exec TCP socket for `family`'s address.
    public static func tcp(for address: IPAddress) throws(SystemError) -> Socket {
        let fd = socket(address.isIPv4 ? AF_INET : AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket") }
        return Socket(fd: fd)
    }

    /// Starts connecting; completion is signalled by writability, then `pendingError()`.
    public func connect(to endpoint: SocketEndpoint) throws(SystemError) {
        let r = endpoint.withSockaddr { Glibc.connect(fd, $0, $1) }
        if r != 0 && errno != EINPROGRESS { throw SystemError("connect(\(endpoint))") }
    }

    /// SO_ERROR: 0 when a non-blocking connect succeeded.
    public func pendingError() -> Int32 {
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
        return err
    }

    public func setOption(_ level: Int32, _ name: Int32, _ value: Int32, _ what: String) throws(SystemError) {
        var v = value
        guard setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw SystemError("setsockopt(\(what))")
        }
    }

    public func setNoDelay() { try? setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1, "TCP_NODELAY") }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscallRetrying("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// Copies what has arrived, up to the buffer's size, without taking it from the socket
    /// (`MSG_PEEK`): the relay looks at a PROXY protocol header this way and then reads exactly its
    /// length, so nothing after it is read early.
    public func peek(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscallRetrying("recv") { Glibc.recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_PEEK)) }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscallRetrying("send") { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Writes the spans in order with one `sendmsg`, as one `write` of their concatenation would;
    /// returns the bytes taken (a partial write may end inside any span). At most `maximumSpans`.
    public func write(gathering spans: [UnsafeRawBufferPointer]) throws(SystemError) -> IOResult<Int> {
        precondition(spans.count <= Self.maximumSpans, "\(spans.count) spans in one write, at most \(Self.maximumSpans)")
        // The iovecs live on the stack: an array of them per write was an allocation and a free on
        // every relay write toward a destination.
        return try withUnsafeTemporaryAllocation(of: iovec.self, capacity: spans.count) { (v) throws(SystemError) -> IOResult<Int> in
            for (i, span) in spans.enumerated() {
                v.initializeElement(at: i, to: iovec(iov_base: UnsafeMutableRawPointer(mutating: span.baseAddress), iov_len: span.count))
            }
            var message = msghdr()
            message.msg_iov = v.baseAddress
            message.msg_iovlen = v.count
            return try syscallRetrying("sendmsg") { Glibc.sendmsg(fd, &message, Int32(MSG_NOSIGNAL)) }
        }
    }

    /// The most spans `write(gathering:)` takes, well under the kernel's UIO_MAXIOV (1,024).
    public static let maximumSpans = 128

    /// The address and port the socket is bound to (`getsockname`): a listener's port when it was
    /// bound to port 0.
    public func localEndpoint() throws(SystemError) -> SocketEndpoint {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let r = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard r == 0, let endpoint = SocketEndpoint(storage: storage) else { throw SystemError("getsockname") }
        return endpoint
    }

    /// Half-closes the sending direction (FIN).
    public func shutdownWrite() { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Closes with SO_LINGER 0, so the peer gets RST instead of FIN.
    public func closeWithReset() {
        var l = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
        Glibc.close(fd)
    }

    public func close() { Glibc.close(fd) }

    /// Runs `setUp` on this new socket (options, bind, connect, registering it with a loop) and
    /// returns what it returns; when it throws, closes the socket first, so that a socket whose
    /// set-up failed half-way is never leaked. Every constructor of a socket ends this way.
    @inlinable
    public func closingOnFailure<T, E: Error>(_ setUp: () throws(E) -> T) throws(E) -> T {
        do {
            return try setUp()
        } catch {
            close()
            throw error
        }
    }

    /// A listening socket on `endpoint` (SO_REUSEADDR; IPv6 sockets also take IPv4 when bound to ::).
    public static func listen(on endpoint: SocketEndpoint, backlog: Int32 = 1024) throws(SystemError) -> Socket {
        let s = try tcp(for: endpoint.address)
        try s.closingOnFailure { () throws(SystemError) in
            try s.setOption(SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR")
            if !endpoint.address.isIPv4 { try s.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0, "IPV6_V6ONLY") }
            let r = endpoint.withSockaddr { Glibc.bind(s.fd, $0, $1) }
            guard r == 0 else {
                let code = errno
                throw SystemError("bind(\(endpoint))", code: code, hint: code == EADDRINUSE ? "another process listens on this port" : nil)
            }
            guard Glibc.listen(s.fd, backlog) == 0 else { throw SystemError("listen(\(endpoint))") }
        }
        return s
    }

    /// Accepts one connection, non-blocking; `.wouldBlock` when none is waiting.
    public func accept() throws(SystemError) -> IOResult<(Socket, SocketEndpoint?)> {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let r = try syscallRetrying("accept") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Int(sluice_accept_nonblocking(fd, $0, &len))
                }
            }
        }
        switch r {
        case .wouldBlock: return .wouldBlock
        case .done(let newFD): return .done((Socket(fd: Int32(newFD)), SocketEndpoint(storage: storage)))
        }
    }
}

extension SocketEndpoint {
    /// Calls `body` with this endpoint as a `sockaddr` (IPv4 or IPv6) and its length. Allocates
    /// nothing: the relay's datagram batch calls it for every datagram it sends.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch address {
        case .v4(let a):
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = port.bigEndian
            sa.sin_addr.s_addr = a.bigEndian
            return withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        case .v6(let hi, let lo):
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sa.sin6_addr) { raw in
                raw.storeBytes(of: hi.bigEndian, toByteOffset: 0, as: UInt64.self)
                raw.storeBytes(of: lo.bigEndian, toByteOffset: 8, as: UInt64.self)
            }
            return withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
    }

    /// From a `sockaddr_storage` filled by accept/getsockname/recvfrom; nil for other families.
    /// Reads the address in place: the UDP path calls it for every datagram it receives.
    public init?(storage: sockaddr_storage) {
        var s = storage
        let endpoint: SocketEndpoint? = withUnsafeBytes(of: &s) { raw in
            switch Int32(storage.ss_family) {
            case AF_INET:
                let port = UInt16(bigEndian: raw.load(fromByteOffset: MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!, as: UInt16.self))
                return SocketEndpoint(address: IPAddress(v4In: raw, at: MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!), port: port)
            case AF_INET6:
                let port = UInt16(bigEndian: raw.load(fromByteOffset: MemoryLayout<sockaddr_in6>.offset(of: \.sin6_port)!, as: UInt16.self))
                let address = IPAddress(v6In: raw, at: MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!)
                // Unwrap IPv4-mapped addresses (::ffff:a.b.c.d) from dual-stack sockets.
                if case .v6(let hi, let lo) = address, hi == 0, lo >> 32 == 0xFFFF {
                    return SocketEndpoint(address: .v4(UInt32(truncatingIfNeeded: lo)), port: port)
                }
                return SocketEndpoint(address: address, port: port)
            default:
                return nil
            }
        }
        guard let endpoint else { return nil }
        self = endpoint
    }
}
