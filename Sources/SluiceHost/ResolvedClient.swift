import Glibc
import SluiceLog

/// Talks to systemd-resolved over the system bus (`SystemBus`): whether it runs, and the link
/// settings of `ResolvedLink` made and undone. Control path only.
public enum ResolvedClient {
    /// resolved's runtime directory; without it resolved is not running, and libsystemd is never
    /// loaded to ask the bus.
    public static let runtimeDirectory = "/run/systemd/resolve"
    /// How long `apply` keeps asking while resolved has not yet seen the new TUN (`NoSuchLink`):
    /// resolved learns of links from its own netlink socket, which may lag a moment behind `up`.
    static let linkWaitMilliseconds = 3_000

    /// Whether systemd-resolved runs here: its runtime directory exists, the system bus answers,
    /// and `org.freedesktop.resolve1` has an owner (asked with NameHasOwner, which does not start
    /// the service). `.failure` says why not, for a log line or an error.
    public static func probe() -> Result<Void, ProbeFailure> {
        guard access(runtimeDirectory, F_OK) == 0 else { return .failure(ProbeFailure("no \(runtimeDirectory)")) }
        guard access(SystemBus.socketPath, F_OK) == 0 || getenv("DBUS_SYSTEM_BUS_ADDRESS") != nil else {
            return .failure(ProbeFailure("no system bus at \(SystemBus.socketPath)"))
        }
        do throws(HostError) {
            guard try SystemBus().nameHasOwner(ResolvedLink.service) else {
                return .failure(ProbeFailure("nothing owns \(ResolvedLink.service) on the system bus"))
            }
            return .success(())
        } catch {
            return .failure(ProbeFailure("\(error)"))
        }
    }

    /// Why `probe` found no resolved.
    public struct ProbeFailure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// Configures the link (see `ResolvedLink`) and returns its interface index, which the state
    /// file keeps. If a call fails, what the earlier ones set is reverted before the error is thrown.
    static func apply(_ link: ResolvedLink, netlink: NetlinkSocket) throws(HostError) -> Int32 {
        let index = try netlink.interfaceIndex(named: link.interface)
        let bus = try SystemBus()
        var waited = 0
        var done = 0
        let calls = link.calls(index: index)
        do throws(HostError) {
            while done < calls.count {
                do throws(HostError) {
                    try bus.call(calls[done])
                    done += 1
                } catch .dbus(_, ResolvedLink.noSuchLinkError?, _) where done == 0 && waited < linkWaitMilliseconds {
                    usleep(50_000)
                    waited += 50
                }
            }
        } catch {
            if done > 0 { try? bus.call(ResolvedLink.revertCall(index: index)) }
            throw error
        }
        if waited > 0 { Log.debug("systemd-resolved knew \(link.interface) after \(waited) ms", "host") }
        return index
    }

    /// `RevertLink` for the link `interface` had index `index`. When that interface is gone (the
    /// TUN left with its process), resolved has dropped the link's settings itself: the step counts
    /// as undone (`HostError.noSuchInterface`), and an index the kernel gave to another link since
    /// is left alone.
    static func revert(interface: String, index: Int32, netlink: NetlinkSocket) throws(HostError) {
        guard (try? netlink.interfaceIndex(named: interface)) == index else { throw .noSuchInterface(name: interface) }
        try SystemBus().call(ResolvedLink.revertCall(index: index))
    }
}
