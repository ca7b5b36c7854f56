import Glibc
import SluiceSystem

/// The firewall mark on a socket (`SO_MARK`): every packet it sends carries the mark, which policy
/// rules and nftables can match. Sluice marks its carrier sockets so the rule
/// `not fwmark M lookup T` keeps them on the main table instead of routing them into the TUN.
public enum SocketMark {
    /// Sets `SO_MARK` on `fd`. Needs `CAP_NET_ADMIN` (otherwise `EPERM`).
    public static func set(_ mark: UInt32, on fd: Int32) throws(HostError) {
        var value = mark
        do {
            _ = try syscall("setsockopt(SO_MARK)") { setsockopt(fd, SOL_SOCKET, SO_MARK, &value, socklen_t(MemoryLayout<UInt32>.size)) }
        } catch {
            throw .socketMark(fd: fd, mark: mark, errno: error.code)
        }
    }

    /// The current `SO_MARK` of `fd` (0 when unmarked).
    public static func get(from fd: Int32) throws(HostError) -> UInt32 {
        var value: UInt32 = 0
        var length = socklen_t(MemoryLayout<UInt32>.size)
        do {
            _ = try syscall("getsockopt(SO_MARK)") { getsockopt(fd, SOL_SOCKET, SO_MARK, &value, &length) }
        } catch {
            throw .socketMark(fd: fd, mark: nil, errno: error.code)
        }
        return value
    }
}
