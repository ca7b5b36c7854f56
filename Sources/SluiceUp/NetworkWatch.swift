import SluiceHost
import SluiceLog
import SluiceLoop
import SluiceWire

/// Notices when the host's path to the relay changes — the default route moves to another link, the
/// carriers' source address goes away or is replaced, a link goes down or up — from the kernel's own
/// announcements (`NetworkMonitor`), and says so at once instead of leaving the carriers to time out.
///
/// Every announcement that is not about the TUN or Sluice's own tables schedules one look at the
/// path (debounced: a Wi-Fi roam or a DHCP renewal is a burst of them): `ip route get <relay> mark M`,
/// the lookup `HostSetup.relayPath` makes before anything is installed. When its answer (interface,
/// gateway, source address) differs from the last one, `onChange` gets both and the change is logged
/// in one line. Part of `sluice up` (the host side); on the engine's loop thread.
final class NetworkWatch {
    /// How long announcements gather before the path is looked at.
    static let debounceMilliseconds: UInt64 = 100

    private unowned let loop: EventLoop
    private let monitor: NetworkMonitor
    private let netlink: NetlinkSocket
    private let relay: IPAddress
    private let fwmark: UInt32
    private let tunName: String
    private let tunIndex: Int32
    /// Tables whose routes Sluice itself installs (`--table` and the two after it).
    private let ownTables: ClosedRange<UInt32>
    /// The path at the last look; nil while there is no route to the relay.
    private(set) var path: RouteLookup?
    private var pending: LoopTimer?
    /// The path to the relay changed from `old` to `new` (nil: no route now). Returns what to add
    /// to the log line ("2 carriers reconnecting").
    var onChange: ((_ new: RouteLookup?, _ old: RouteLookup?) -> String)?

    /// Watches the path of carriers marked `fwmark` to `relay`, ignoring the TUN `tunName` and the
    /// tables from `table` on (`HostConfiguration.table` and the two after it).
    init(loop: EventLoop, relay: IPAddress, fwmark: UInt32, table: UInt32, tunName: String) throws(HostError) {
        self.loop = loop
        monitor = try NetworkMonitor()
        netlink = try NetlinkSocket()
        self.relay = relay
        self.fwmark = fwmark
        self.tunName = tunName
        tunIndex = try netlink.interfaceIndex(named: tunName)
        ownTables = table...(table &+ 2)
        path = try? HostSetup.relayPath(relay, fwmark: fwmark, tun: tunName, netlink: netlink)
    }

    func start() throws {
        try loop.register(fd: monitor.fd, events: [.readable]) { [unowned self] _ in self.read() }
    }

    func stop() {
        pending?.cancel()
        loop.deregister(fd: monitor.fd)
    }

    private func read() {
        let relevant = monitor.drain().filter { event in
            if event.interfaceIndex == tunIndex { return false }
            if case .route(let table, _, _, _, _) = event, ownTables.contains(table) { return false }
            return true
        }
        guard let first = relevant.first, pending?.isPending != true else { return }
        Log.trace("network: \(first)" + (relevant.count > 1 ? " and \(relevant.count - 1) more" : ""), "client")
        pending = loop.schedule(afterMilliseconds: Self.debounceMilliseconds) { [weak self] in self?.look() }
    }

    /// Looks up the path again; reports and logs it if it changed.
    private func look() {
        let new: RouteLookup?
        var problem = ""
        do throws(HostError) {
            new = try HostSetup.relayPath(relay, fwmark: fwmark, tun: tunName, netlink: netlink)
        } catch {
            new = nil
            problem = "\(error)"
        }
        guard new != path else { return }
        let old = path
        path = new
        let outcome = onChange?(new, old) ?? ""
        let was = old.map { " (was \($0.pathDescription))" } ?? ""
        if let new {
            Log.info("network changed: the relay \(relay) is now reached \(new.pathDescription)\(was); \(outcome)", "client")
        } else {
            Log.info("network changed: \(problem)\(was); \(outcome)", "client")
        }
    }
}
