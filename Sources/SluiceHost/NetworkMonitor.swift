import CSluiceHostShims
import Glibc
import SluiceSystem

/// A `NETLINK_ROUTE` socket subscribed to the kernel's announcements of link, address and route
/// changes, IPv4 and IPv6 (`RTMGRP_LINK`, `RTMGRP_IPV4_IFADDR`, `RTMGRP_IPV6_IFADDR`,
/// `RTMGRP_IPV4_ROUTE`, `RTMGRP_IPV6_ROUTE`; what `ip monitor` listens to). Non-blocking: the
/// owner registers `fd` with its event loop and calls `drain()` when it is readable.
///
/// Thread rule: one thread (the loop that owns it).
public final class NetworkMonitor {
    /// The multicast groups joined.
    public static let groups = UInt32(RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE)

    public let fd: Int32
    /// One datagram: the kernel sends notifications of at most a page or two.
    private var buffer = [UInt8](repeating: 0, count: 8192)

    public init() throws(HostError) {
        do {
            fd = try syscall("socket(NETLINK_ROUTE)") { socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), NETLINK_ROUTE) }
        } catch {
            throw .netlinkSocket(operation: "socket(AF_NETLINK) for the network monitor", errno: error.code)
        }
        var local = sockaddr_nl()
        local.nl_family = sa_family_t(AF_NETLINK)
        local.nl_groups = Self.groups
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size)) }
        }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw .netlinkSocket(operation: "bind to the rtnetlink link, address and route groups", errno: e)
        }
    }

    deinit {
        close(fd)
    }

    /// Every event pending on the socket. A receive buffer that overflowed gives one `.overflow`
    /// (the kernel dropped announcements; the owner should look at the state afresh).
    public func drain() -> [NetworkEvent] {
        var events: [NetworkEvent] = []
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n < 0 {
                switch errno {
                case EINTR: continue
                case ENOBUFS: events.append(.overflow); continue
                default: return events  // EAGAIN: drained
                }
            }
            if n == 0 { return events }
            events += NetworkEvent.parse(datagram: Array(buffer.prefix(n)))
        }
    }
}
