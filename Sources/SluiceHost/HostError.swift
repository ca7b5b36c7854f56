import Glibc
import SluiceSystem

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
    /// An exclusive open (`TunDevice.Options.exclusive`) found `device` existing already (`EBUSY`),
    /// typically a persistent device left behind.
    case tunExists(device: String)
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
    /// libnftables refused a command; `message` is nft's own error line.
    case nftables(operation: String, message: String)
    /// Reading or writing the resolver configuration (`/etc/resolv.conf`) failed.
    case resolver(operation: String, path: String, errno: Int32)
    /// The resolver configuration changed since Sluice wrote it, so Sluice leaves it alone; the
    /// original is kept in `backup`.
    case resolverChangedMeanwhile(path: String, backup: String)
    /// The state file could not be read, parsed or written.
    case stateFile(path: String, problem: String)
    /// Another `sluice up` that is still running owns this tunnel's state file.
    case alreadyUp(tun: String, pid: Int32, stateFile: String)
    /// A state file was written in another network or mount namespace; applying it here could
    /// remove things Sluice did not add.
    case foreignNamespace(stateFile: String, which: String)
    /// `--route-all` needs a route to the relay outside the tunnel; `detail` says what the kernel answered.
    case relayUnreachable(relay: String, detail: String)
    /// A cgroup v2 file operation (mkdir, rmdir, writing cgroup.procs) failed.
    case cgroup(operation: String, path: String, errno: Int32)
    /// No cgroup v2 file system is mounted (per-application routing needs one).
    case noCGroup2
    /// A D-Bus step failed: loading libsystemd, connecting to the system bus, or a method call
    /// (`operation` names it) that the callee refused with the D-Bus error `name` and `message`.
    case dbus(operation: String, name: String?, message: String)
    /// `--resolver resolved` was asked for, but systemd-resolved does not run; `detail` says what
    /// was found.
    case resolvedNotRunning(detail: String)

    /// The errno behind the error, when there is one.
    public var errno: Int32? {
        switch self {
        case .tunOpen(_, let e), .tunAttach(_, let e), .tunControl(_, _, let e), .tunIO(_, _, let e),
            .netlinkSocket(_, let e), .netlinkRequest(_, let e, _), .socketMark(_, _, let e):
            return e
        case .noSuchInterface:
            return ENODEV
        case .tunExists:
            return EBUSY
        case .resolver(_, _, let e), .cgroup(_, _, let e):
            return e
        case .invalidInterfaceName, .netlinkReply, .nftables, .resolverChangedMeanwhile, .stateFile, .alreadyUp,
            .foreignNamespace, .relayUnreachable, .noCGroup2, .dbus, .resolvedNotRunning:
            return nil
        }
    }

    public var description: String {
        switch self {
        case .invalidInterfaceName(let name, let reason):
            return "invalid interface name \"\(name)\": \(reason)"
        case .tunOpen(let device, let e):
            return "open(/dev/net/tun) for device \(device): \(SystemError.describe(e))" + hint(tunOpen: e)
        case .tunAttach(let device, let e):
            return "create TUN device \(device) (TUNSETIFF): \(SystemError.describe(e))" + hint(tunAttach: e, device: device)
        case .tunExists(let device):
            return "create TUN device \(device) (TUNSETIFF, exclusive): \(SystemError.describe(EBUSY)) — device \(device) exists already;"
                + " if it was left behind, remove it with `ip link delete \(device)`"
        case .tunControl(let device, let operation, let e):
            return "\(operation) on TUN device \(device): \(SystemError.describe(e))" + Self.privilegeHint(e)
        case .tunIO(let device, let operation, let e):
            return "\(operation) on TUN device \(device): \(SystemError.describe(e))"
                + (e == EIO ? " — the device is down or was deleted" : "")
        case .noSuchInterface(let name):
            return "no network interface named \(name) — check the name with `ip link`"
        case .netlinkSocket(let operation, let e):
            return "\(operation) (NETLINK_ROUTE socket): \(SystemError.describe(e))" + Self.privilegeHint(e)
        case .netlinkRequest(let operation, let e, let kernelMessage):
            let kernel = kernelMessage.map { " — the kernel says: \($0)" } ?? ""
            return "\(operation): \(SystemError.describe(e))\(kernel)" + Self.privilegeHint(e)
        case .netlinkReply(let operation, let problem):
            return "\(operation): \(problem)"
        case .socketMark(let fd, let mark, let e):
            let call = mark.map { "setsockopt(SO_MARK=0x\(String($0, radix: 16)))" } ?? "getsockopt(SO_MARK)"
            return "\(call) on fd \(fd): \(SystemError.describe(e))" + Self.privilegeHint(e)
        case .nftables(let operation, let message):
            let lower = message.lowercased()
            let hint = lower.contains("not permitted") ? " — run as root or grant CAP_NET_ADMIN"
                : lower.contains("file exists") && operation.contains("table")
                ? " — another sluice up is running, or a crashed one left the table without its record; check `nft list tables`"
                : lower.contains("no such file") || lower.contains("not supported")
                ? " — this kernel may lack nftables (nf_tables, nft_reject_inet, nft_counter); try `modprobe nf_tables`" : ""
            return "\(operation) (nftables): \(message)" + hint
        case .resolver(let operation, let path, let e):
            return "\(operation) \(path): \(SystemError.describe(e))" + (e == EROFS ? " — the file system is read-only" : Self.privilegeHint(e))
        case .resolverChangedMeanwhile(let path, let backup):
            return "\(path) was changed by something else while the tunnel was up, so Sluice leaves it as it is; the original is in \(backup)"
        case .stateFile(let path, let problem):
            return "state file \(path): \(problem)"
        case .alreadyUp(let tun, let pid, let stateFile):
            return "tunnel \(tun) is up already (sluice up, pid \(pid), recorded in \(stateFile)); stop it first with `sluice down --tun \(tun)`"
        case .foreignNamespace(let stateFile, let which):
            return "state file \(stateFile) was written in another \(which) namespace; run `sluice down` there (nothing was changed here)"
        case .relayUnreachable(let relay, let detail):
            return "--route-all: the relay \(relay) has no route outside the tunnel (\(detail)); the host's own routes must reach the relay"
        case .cgroup(let operation, let path, let e):
            return "cgroup: \(operation) \(path): \(SystemError.describe(e))" + Self.privilegeHint(e)
        case .noCGroup2:
            return "no cgroup v2 file system is mounted (none in /proc/self/mountinfo); per-application routing needs cgroup v2 — mount it with `mount -t cgroup2 none /sys/fs/cgroup`"
        case .dbus(let operation, let name, let message):
            let hint: String
            switch name {
            case "org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired":
                hint = " — run as root or grant CAP_NET_ADMIN"
            case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
                hint = " — systemd-resolved is not running; start it, or use --resolver file"
            default:
                hint = ""
            }
            return "D-Bus: \(operation): \(message)" + (name.map { " (\($0))" } ?? "") + hint
        case .resolvedNotRunning(let detail):
            return "--resolver resolved: systemd-resolved is not running (\(detail)); start it, or use --resolver file or auto"
        }
    }

    private func hint(tunOpen e: Int32) -> String {
        switch e {
        case ENOENT, ENODEV, ENXIO: return " — no /dev/net/tun: load the tun module (modprobe tun)"
        case EPERM, EACCES: return " — run as root, or grant CAP_NET_ADMIN and read-write access to /dev/net/tun"
        default: return ""
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
