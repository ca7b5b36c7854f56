import CSluiceShims
import Glibc
import SluiceWire

/// A device route in a routing table: `10.20.0.0/24 dev sluice0 table 21324 [metric N]`
/// (what `ip route add` installs with no gateway). Sluice sends its `--route` prefixes into its
/// own table through the TUN this way.
public struct Route: Hashable, Sendable, CustomStringConvertible {
    /// The destination; host bits are cleared on creation, since the kernel rejects them.
    public let destination: IPPrefix
    /// The outgoing interface.
    public var interface: String
    /// The routing table (`RTA_TABLE.rawValue`); 254 is `main`.
    public var table: UInt32
    /// The metric (`RTA_PRIORITY.rawValue`); `nil` leaves the kernel's default (0 for IPv4, 1024 for IPv6)
    /// and, on delete, matches any metric.
    public var metric: UInt32?

    public init(_ destination: IPPrefix, dev interface: String, table: UInt32, metric: UInt32? = nil) {
        self.destination = destination.network
        self.interface = interface
        self.table = table
        self.metric = metric
    }

    public var description: String {
        "\(destination) dev \(interface) table \(table)" + (metric.map { " metric \($0)" } ?? "")
    }
}

/// Route operations (`RTM_NEWROUTE`, `RTM_DELROUTE`, `RTM_GETROUTE`).
extension NetlinkSocket {
    /// Adds `route`; fails with `EEXIST` if the same destination and metric are in the table already.
    public func add(_ route: Route) throws(HostError) {
        let request = try routeMessage(route, type: RTM_NEWROUTE, flags: NLM_F_CREATE | NLM_F_EXCL)
        try execute(request, operation: "add route \(route)")
    }

    /// Deletes `route`; fails with `ESRCH` (IPv4) or `ENOENT` (IPv6) if it is not there.
    public func delete(_ route: Route) throws(HostError) {
        let request = try routeMessage(route, type: RTM_DELROUTE, flags: 0)
        try execute(request, operation: "delete route \(route)")
    }

    /// The IPv4 and IPv6 device routes of `table` (routes without an outgoing interface, such as
    /// `unreachable` ones, are left out).
    public func routes(inTable table: UInt32) throws(HostError) -> [Route] {
        try routeMessages(inTable: table).compactMap { message in
            guard let header = message.familyHeader(rtmsg.self) else { return nil }
            let attributes = message.attributes(after: rtmsg.self)
            guard let oif = attributes.uint32(RTA_OIF.rawValue), let name = Self.interfaceName(Int32(bitPattern: oif)) else { return nil }
            let zero = [UInt8](repeating: 0, count: header.rtm_family == UInt8(AF_INET) ? 4 : 16)
            let raw = attributes[RTA_DST.rawValue] ?? zero
            guard raw.count == zero.count, let prefix = IPPrefix(address: IPAddress(bytes: raw), length: Int(header.rtm_dst_len)) else { return nil }
            return Route(prefix, dev: name, table: table, metric: attributes.uint32(RTA_PRIORITY.rawValue))
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

    private func routeMessage(_ route: Route, type: Int, flags: Int32) throws(HostError) -> NetlinkMessage {
        let index = try interfaceIndex(named: route.interface)
        let adding = type == RTM_NEWROUTE
        var message = NetlinkMessage(
            type: type, flags: flags,
            header: rtmsg(
                rtm_family: route.destination.address.addressFamily, rtm_dst_len: UInt8(route.destination.length),
                rtm_src_len: 0, rtm_tos: 0,
                rtm_table: route.table < 256 ? UInt8(route.table) : UInt8(RT_TABLE_UNSPEC.rawValue),
                rtm_protocol: adding ? UInt8(RTPROT_STATIC) : 0,
                // A device route is link-scoped; a delete with scope NOWHERE matches any scope.
                rtm_scope: UInt8(adding ? RT_SCOPE_LINK.rawValue : RT_SCOPE_NOWHERE.rawValue),
                rtm_type: adding ? UInt8(RTN_UNICAST) : 0, rtm_flags: 0))
        if route.destination.length > 0 { message.append(RTA_DST.rawValue, bytes: route.destination.address.bytes) }
        message.append(RTA_OIF.rawValue, uint32: UInt32(bitPattern: index))
        message.append(RTA_TABLE.rawValue, uint32: route.table)
        if let metric = route.metric { message.append(RTA_PRIORITY.rawValue, uint32: metric) }
        return message
    }

    static func interfaceName(_ index: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE))
        guard if_indextoname(UInt32(bitPattern: index), &buffer) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
