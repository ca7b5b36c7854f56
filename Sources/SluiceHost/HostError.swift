import Glibc

/// Everything that can go wrong while Sluice configures the host: the TUN device, rtnetlink
/// (links, addresses, routes, rules) and socket marks. Each case carries what a person needs to act,
/// and `description` renders it as one sentence naming the operation, the device and the errno,
/// for example `create TUN device sluice0 (TUNSETIFF): Operation not permitted (EPERM) — run as
/// root or grant CAP_NET_ADMIN`.
public enum HostError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The name cannot be a Linux interface name (empty, longer than 15 bytes, `/`, `:`, space...).
    case invalidInterfaceName(name: String, reason: String)
    /// `open("/dev/net/tun")` failed; `device` is the name that was requested.
    case tunOpen(device: String, errno: Int32)
    /// `ioctl(TUNSETIFF)` refused to create or attach to `device`.
    case tunAttach(device: String, errno: Int32)
    /// Another ioctl on an open TUN failed, such as `TUNSETOFFLOAD`; `operation` names it.
    case tunControl(device: String, operation: String, errno: Int32)
    /// `read(2)` or `write(2)` on the TUN failed with something other than `EAGAIN`.
    case tunIO(device: String, operation: String, errno: Int32)
    /// No network interface has this name (`if_nametoindex` said `ENODEV`).
    case noSuchInterface(name: String)
    /// The `NETLINK_ROUTE` socket could not be opened, bound or configured; `operation` names the call.
    case netlinkSocket(operation: String, errno: Int32)
    /// The kernel answered a netlink request with an error. `operation` reads like
    /// `add route 10.20.0.0/24 dev sluice0 table 21324`; `kernelMessage` is the extended-ACK text,
    /// when the kernel gave one (`Invalid prefix for given prefix length`).
    case netlinkRequest(operation: String, errno: Int32, kernelMessage: String?)
    /// The kernel's answer could not be understood, or never came; `problem` says which.
    case netlinkReply(operation: String, problem: String)
    /// `setsockopt(SO_MARK)` (setting `mark`) or `getsockopt(SO_MARK)` (`mark` is `nil`) failed.
    case socketMark(fd: Int32, mark: UInt32?, errno: Int32)

    /// The errno behind the error, when there is one.
    public var errno: Int32? {
        switch self {
        case .tunOpen(_, let e), .tunAttach(_, let e), .tunControl(_, _, let e), .tunIO(_, _, let e),
            .netlinkSocket(_, let e), .netlinkRequest(_, let e, _), .socketMark(_, _, let e):
            return e
        case .noSuchInterface:
            return ENODEV
        case .invalidInterfaceName, .netlinkReply:
            return nil
        }
    }

    public var description: String {
        switch self {
        case .invalidInterfaceName(let name, let reason):
            return "invalid interface name \"\(name)\": \(reason)"
        case .tunOpen(let device, let e):
            return "open(/dev/net/tun) for device \(device): \(Errno.describe(e))" + hint(tunOpen: e)
        case .tunAttach(let device, let e):
            return "create TUN device \(device) (TUNSETIFF): \(Errno.describe(e))" + hint(tunAttach: e, device: device)
        case .tunControl(let device, let operation, let e):
            return "\(operation) on TUN device \(device): \(Errno.describe(e))" + Self.privilegeHint(e)
        case .tunIO(let device, let operation, let e):
            return "\(operation) on TUN device \(device): \(Errno.describe(e))"
                + (e == EIO ? " — the device is down or was deleted" : "")
        case .noSuchInterface(let name):
            return "no network interface named \(name) — check the name with `ip link`"
        case .netlinkSocket(let operation, let e):
            return "\(operation) (NETLINK_ROUTE socket): \(Errno.describe(e))" + Self.privilegeHint(e)
        case .netlinkRequest(let operation, let e, let kernelMessage):
            let kernel = kernelMessage.map { " — the kernel says: \($0)" } ?? ""
            return "\(operation): \(Errno.describe(e))\(kernel)" + Self.privilegeHint(e)
        case .netlinkReply(let operation, let problem):
            return "\(operation): \(problem)"
        case .socketMark(let fd, let mark, let e):
            let call = mark.map { "setsockopt(SO_MARK=0x\(String($0, radix: 16)))" } ?? "getsockopt(SO_MARK)"
            return "\(call) on fd \(fd): \(Errno.describe(e))" + Self.privilegeHint(e)
        }
    }

    private func hint(tunOpen e: Int32) -> String {
        switch e {
        case ENOENT, ENODEV, ENXIO: return " — no /dev/net/tun: load the tun module (modprobe tun)"
        default: return Self.privilegeHint(e)
        }
    }

    private func hint(tunAttach e: Int32, device: String) -> String {
        switch e {
        case EBUSY: return " — device \(device) is in use by another process"
        case EINVAL: return " — \(device) exists and is not a TUN device, or the flags were rejected"
        default: return Self.privilegeHint(e)
        }
    }

    private static func privilegeHint(_ e: Int32) -> String {
        e == EPERM || e == EACCES ? " — run as root or grant CAP_NET_ADMIN" : ""
    }
}
