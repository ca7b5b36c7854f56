import SluiceHost
import SluiceLog
import SluiceLoop
import SluiceWire

/// Notices when the host's path to a relay changes — the default route moves to another link, the
/// carriers' source address goes away or is replaced, a link goes down or up — from the kernel's own
/// announcements (`NetworkMonitor`), and says so at once instead of leaving the carriers to time out.
///
/// Every announcement that is not about the TUN or Sluice's own tables schedules one look at the
/// path (debounced: a Wi-Fi roam or a DHCP renewal is a burst of them): `ip route get <relay> mark M`
/// for each relay, the lookup `HostSetup.relayPath` makes before anything is installed. When an
/// answer (interface, gateway, source address) differs from the last one, `onChange` gets the new
/// source address of each relay whose path changed and still exists, and the change is logged in one
/// line. Part of `sluice up` (the host side); on the engine's loop thread.
final class NetworkWatch {
    /// How long announcements gather before the path is looked at.
    static let debounceMilliseconds: UInt64 = 100

    private unowned let loop: EventLoop
    private let monitor: NetworkMonitor
    private let netlink: NetlinkSocket
    /// The relays' addresses, each once.
    private let relays: [IPAddress]
    private let fwmark: UInt32
    private let tunName: String
    private let tunIndex: Int32
    /// Tables whose routes Sluice itself installs (`--table` and the two after it).
    private let ownTables: ClosedRange<UInt32>
    /// Each relay's path at the last look; nil while there is no route to it.
    private(set) var paths: [RouteLookup?]
    private var pending: LoopTimer?
    /// The paths changed: the source address now used toward each relay whose path changed and
    /// has a route (none: the changed paths lead nowhere now). Returns what to add to the log line
    /// ("2 carriers reconnecting").
    var onChange: ((_ sources: [IPAddress: IPAddress]) -> String)?

    /// Watches the paths of carriers marked `fwmark` to `relays`, ignoring the TUN `tunName` and the
    /// tables from `table` on (`HostConfiguration.table` and the two after it).
    init(loop: EventLoop, relays: [IPAddress], fwmark: UInt32, table: UInt32, tunName: String) throws(HostError) {
        self.loop = loop
        monitor = try NetworkMonitor()
        let netlink = try NetlinkSocket()
        self.netlink = netlink
        var distinct: [IPAddress] = []
        for relay in relays where !distinct.contains(relay) { distinct.append(relay) }
        self.relays = distinct
        self.fwmark = fwmark
        self.tunName = tunName
        tunIndex = try netlink.interfaceIndex(named: tunName)
        ownTables = table...(table &+ 2)
        paths = distinct.map { try? HostSetup.relayPath($0, fwmark: fwmark, tun: tunName, netlink: netlink) }
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

    /// Looks up the paths again; reports and logs those that changed.
    private func look() {
        var sources: [IPAddress: IPAddress] = [:]
        var changes: [String] = []
        for (i, relay) in relays.enumerated() {
            let new: RouteLookup?
            var problem = ""
            do throws(HostError) {
                new = try HostSetup.relayPath(relay, fwmark: fwmark, tun: tunName, netlink: netlink)
            } catch {
                new = nil
                problem = "\(error)"
            }
            guard new != paths[i] else { continue }
            let was = paths[i].map { " (was \($0.pathDescription))" } ?? ""
            paths[i] = new
            if let new {
                sources[relay] = new.source
                changes.append("the relay \(relay) is now reached \(new.pathDescription)\(was)")
            } else {
                changes.append("\(problem)\(was)")
            }
        }
        guard !changes.isEmpty else { return }
        let outcome = onChange?(sources) ?? ""
        Log.info("network changed: \(changes.joined(separator: "; ")); \(outcome)", "client")
    }
}
