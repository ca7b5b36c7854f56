import CSluiceHostShims
import Glibc
import SluiceWire

/// A route in a routing table: a device route `10.20.0.0/24 dev sluice0 table 21324 [metric N]`
/// (what `ip route add` installs with no gateway), or a `throw 192.0.2.0/24 table 21324` route.
/// Sluice sends its `--route` prefixes (and, with `--route-all`, the default routes) into its own
/// table through the TUN, and its `--exclude` prefixes as `throw` routes, which end the lookup in
/// that table so the policy rules after it (and so the main table) decide.
public struct Route: Hashable, Sendable, CustomStringConvertible {
    /// What the route does with a matching packet (`rtm_type`).
    public enum Kind: Hashable, Sendable {
        /// Out of `interface` (`RTN_UNICAST`, link scope).
        case device
        /// Lookup in this table fails and the rules go on (`RTN_THROW`); `interface` is unused.
        case `throw`
    }

    /// The destination; host bits are cleared on creation, since the kernel rejects them.
    public let destination: IPPrefix
    public var kind: Kind
    /// The outgoing interface (empty for a `throw` route).
    public var interface: String
    /// The routing table (`RTA_TABLE`); 254 is `main`.
    public var table: UInt32
    /// The metric (`RTA_PRIORITY`); `nil` means the kernel's default, `defaultMetric`.
    public var metric: UInt32?

    /// The metric the kernel gives a route added without one: 0 for IPv4, 1024 for IPv6
    /// (`IP6_RT_PRIO_USER`).
    public var defaultMetric: UInt32 { destination.address.isIPv4 ? 0 : 1024 }

    public init(_ destination: IPPrefix, dev interface: String, table: UInt32, metric: UInt32? = nil) {
        self.destination = destination.network
        self.interface = interface
        self.table = table
        self.metric = metric
        self.kind = .device
    }

    /// `throw <destination> table <table>`.
    public init(throw destination: IPPrefix, table: UInt32, metric: UInt32? = nil) {
        self.init(destination, dev: "", table: table, metric: metric)
        kind = .throw
    }

    public var description: String {
        let what = kind == .throw ? "throw \(destination)" : "\(destination) dev \(interface)"
        return "\(what) table \(table)" + (metric.map { " metric \($0)" } ?? "")
    }
}

/// Route operations (`RTM_NEWROUTE`, `RTM_DELROUTE`, `RTM_GETROUTE`).
extension NetlinkSocket {
    /// Adds `route`; fails with `EEXIST` if the same destination and metric are in the table already.
    public func add(_ route: Route) throws(HostError) {
        let request = try routeMessage(route, type: RTM_NEWROUTE, flags: NLM_F_CREATE | NLM_F_EXCL)
        try execute(request, operation: "add route \(route)")
    }

    /// Deletes `route`; fails with `ESRCH` if it is not there. Only a
    /// route this module added matches: same destination, interface, table and metric, and
    /// protocol `static` (`ip route` adds `boot` routes, which are left alone).
    public func delete(_ route: Route) throws(HostError) {
        let request = try routeMessage(route, type: RTM_DELROUTE, flags: 0)
        try execute(request, operation: "delete route \(route)")
    }

    /// The IPv4 and IPv6 device routes of `table` (routes without an outgoing interface, such as
    /// `unreachable` ones, are left out; a default metric reads as `nil`).
    public func routes(inTable table: UInt32) throws(HostError) -> [Route] {
        try routeMessages(inTable: table).compactMap { message in
            guard let header = message.familyHeader(rtmsg.self) else { return nil }
            let attributes = message.attributes(after: rtmsg.self)
            guard let oif = attributes.uint32(RTA_OIF.rawValue), let name = Self.interfaceName(Int32(bitPattern: oif)) else { return nil }
            let zero = [UInt8](repeating: 0, count: header.rtm_family == UInt8(AF_INET) ? 4 : 16)
            let raw = attributes[RTA_DST.rawValue] ?? zero
            guard raw.count == zero.count, let prefix = IPPrefix(address: IPAddress(bytes: raw), length: Int(header.rtm_dst_len)) else { return nil }
            var route = Route(prefix, dev: name, table: table, metric: attributes.uint32(RTA_PRIORITY.rawValue))
            if route.metric == route.defaultMetric { route.metric = nil }
            return route
        }
    }

    /// Deletes every route of `table`, whatever it points at, for cleaning up after a crash; returns
    /// how many went. Each dumped route is sent back as its own `RTM_DELROUTE`, so exactly it goes.
    @discardableResult
    public func deleteRoutes(inTable table: UInt32) throws(HostError) -> Int {
        var deleted = 0
        for var message in try routeMessages(inTable: table) {
            message.type = UInt16(RTM_DELROUTE)
            message.flags = 0
            do {
                try execute(message, operation: "delete a route of table \(table)")
                deleted += 1
            } catch where error.errno == ESRCH || error.errno == ENOENT {
                continue  // gone meanwhile, e.g. with its interface
            }
        }
        return deleted
    }

    private func routeMessages(inTable table: UInt32) throws(HostError) -> [NetlinkMessage] {
        var found: [NetlinkMessage] = []
        for family in [AF_INET, AF_INET6] {
            let request = NetlinkMessage(type: RTM_GETROUTE, flags: 0, header: rtmsg(rtm_family: UInt8(family), rtm_dst_len: 0, rtm_src_len: 0, rtm_tos: 0, rtm_table: 0, rtm_protocol: 0, rtm_scope: 0, rtm_type: 0, rtm_flags: 0))
            for message in try dump(request, operation: "list routes of table \(table)") {
                guard message.type == RTM_NEWROUTE, let header = message.familyHeader(rtmsg.self) else { continue }
                let attributes = message.attributes(after: rtmsg.self)
                if (attributes.uint32(RTA_TABLE.rawValue) ?? UInt32(header.rtm_table)) == table { found.append(message) }
            }
        }
        return found
    }

    func routeMessage(_ route: Route, type: Int, flags: Int32) throws(HostError) -> NetlinkMessage {
        let index = route.kind == .device ? try interfaceIndex(named: route.interface) : nil
        let adding = type == RTM_NEWROUTE
        // A device route is link-scoped, a throw route universe-scoped; a delete with scope NOWHERE
        // matches any scope.
        let scope = !adding ? RT_SCOPE_NOWHERE : route.kind == .device ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE
        let routeType = route.kind == .device ? RTN_UNICAST : RTN_THROW
        var message = NetlinkMessage(
            type: type, flags: flags,
            header: rtmsg(
                rtm_family: route.destination.address.addressFamily, rtm_dst_len: UInt8(route.destination.length),
                rtm_src_len: 0, rtm_tos: 0,
                rtm_table: route.table < 256 ? UInt8(route.table) : UInt8(RT_TABLE_UNSPEC.rawValue),
                // Sluice's routes are `proto static`; a delete names it, so it never matches a route
                // someone added with another protocol.
                rtm_protocol: UInt8(RTPROT_STATIC),
                rtm_scope: UInt8(scope.rawValue),
                // A device-route delete leaves the type open (0); a throw-route delete names it.
                rtm_type: adding || route.kind == .throw ? UInt8(routeType) : 0, rtm_flags: 0))
        if route.destination.length > 0 { message.append(RTA_DST.rawValue, bytes: route.destination.address.bytes) }
        if let index { message.append(RTA_OIF.rawValue, uint32: UInt32(bitPattern: index)) }
        message.append(RTA_TABLE.rawValue, uint32: route.table)
        // An exact metric on delete too: without one, IPv6 deletes the first match of any metric.
        message.append(RTA_PRIORITY.rawValue, uint32: route.metric ?? route.defaultMetric)
        return message
    }

    static func interfaceName(_ index: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE))
        guard if_indextoname(UInt32(bitPattern: index), &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// What the kernel would do with a packet to one address (`ip route get ADDRESS mark M`).
public struct RouteLookup: Equatable, Sendable {
    /// The outgoing interface, if the route has one.
    public var interface: String?
    /// The next hop, for a route through a gateway.
    public var gateway: IPAddress?
    /// The table the answer came from.
    public var table: UInt32
    /// The source address the kernel picks for a socket that does not bind one (`src` in `ip route
    /// get`): what a carrier connected now would use.
    public var source: IPAddress? = nil

    public init(interface: String?, gateway: IPAddress?, table: UInt32, source: IPAddress? = nil) {
        self.interface = interface
        self.gateway = gateway
        self.table = table
        self.source = source
    }

    /// `dev eth0 via 192.0.2.1 src 192.0.2.7`, the parts known.
    public var pathDescription: String {
        var parts: [String] = []
        if let interface { parts.append("dev \(interface)") }
        if let gateway { parts.append("via \(gateway)") }
        if let source { parts.append("src \(source)") }
        return parts.joined(separator: " ")
    }
}

extension NetlinkSocket {
    /// Asks the kernel how a packet to `destination`, carrying firewall mark `mark`, would be routed,
    /// through the policy rules as they are now (`RTM_GETROUTE` for one address). Throws the kernel's
    /// error, typically `ENETUNREACH`, when there is no route.
    public func lookupRoute(to destination: IPAddress, mark: UInt32 = 0) throws(HostError) -> RouteLookup {
        let bits = UInt8(destination.isIPv4 ? 32 : 128)
        var request = NetlinkMessage(
            type: RTM_GETROUTE, flags: 0,
            header: rtmsg(rtm_family: destination.addressFamily, rtm_dst_len: bits, rtm_src_len: 0, rtm_tos: 0,
                          rtm_table: 0, rtm_protocol: 0, rtm_scope: 0, rtm_type: 0, rtm_flags: 0))
        request.append(RTA_DST.rawValue, bytes: destination.bytes)
        if mark != 0 { request.append(RTA_MARK.rawValue, uint32: mark) }
        let operation = "look up the route to \(destination)" + (mark != 0 ? " with mark 0x\(String(mark, radix: 16))" : "")
        guard let answer = try execute(request, operation: operation).first(where: { $0.type == RTM_NEWROUTE }),
              let header = answer.familyHeader(rtmsg.self)
        else {
            throw .netlinkReply(operation: operation, problem: "the kernel sent no route")
        }
        let attributes = answer.attributes(after: rtmsg.self)
        return RouteLookup(
            interface: attributes.uint32(RTA_OIF.rawValue).flatMap { Self.interfaceName(Int32(bitPattern: $0)) },
            gateway: attributes[RTA_GATEWAY.rawValue].flatMap { $0.count == 4 || $0.count == 16 ? IPAddress(bytes: $0) : nil },
            table: attributes.uint32(RTA_TABLE.rawValue) ?? UInt32(header.rtm_table),
            source: attributes[RTA_PREFSRC.rawValue].flatMap { $0.count == 4 || $0.count == 16 ? IPAddress(bytes: $0) : nil })
    }
}
