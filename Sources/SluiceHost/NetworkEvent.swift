import CSluiceHostShims
import Glibc
import SluiceWire

/// One change the kernel announces on rtnetlink's multicast groups (`NetworkMonitor`): a link, an
/// address or a route appeared, changed or went away. Parsed from the message alone, so the parsing
/// is a pure function that tests feed with bytes.
public enum NetworkEvent: Hashable, Sendable, CustomStringConvertible {
    /// `RTM_NEWLINK` / `RTM_DELLINK`: `up` is `IFF_UP`, `running` is `IFF_RUNNING` (carrier and
    /// operational state, what Wi-Fi association or a cable decides).
    case link(index: Int32, name: String, up: Bool, running: Bool, removed: Bool)
    /// `RTM_NEWADDR` / `RTM_DELADDR`.
    case address(index: Int32, address: IPPrefix, removed: Bool)
    /// `RTM_NEWROUTE` / `RTM_DELROUTE`; `interface` is the outgoing interface's index, if any.
    case route(table: UInt32, destination: IPPrefix, interface: Int32?, gateway: IPAddress?, removed: Bool)
    /// The socket's buffer overflowed (`ENOBUFS`): the kernel dropped notifications, so anything
    /// may have changed.
    case overflow

    /// The interface the event is about, when it names one.
    public var interfaceIndex: Int32? {
        switch self {
        case .link(let index, _, _, _, _), .address(let index, _, _): return index
        case .route(_, _, let interface, _, _): return interface
        case .overflow: return nil
        }
    }

    public var description: String {
        switch self {
        case .link(let index, let name, let up, let running, let removed):
            return removed ? "link \(name) (\(index)) removed" : "link \(name) (\(index)) \(up ? "up" : "down")\(running ? ", running" : "")"
        case .address(let index, let address, let removed):
            return "address \(address) \(removed ? "removed from" : "added to") link \(index)"
        case .route(let table, let destination, let interface, let gateway, let removed):
            return "route \(destination)" + (gateway.map { " via \($0)" } ?? "") + (interface.map { " dev \($0)" } ?? "")
                + " table \(table) \(removed ? "removed" : "added")"
        case .overflow:
            return "notifications lost (receive buffer full)"
        }
    }

    /// The events in one datagram from a rtnetlink multicast socket; messages of other types and
    /// messages too short for their header are skipped.
    public static func parse(datagram bytes: [UInt8]) -> [NetworkEvent] {
        (NetlinkMessage.decode(datagram: bytes) ?? []).compactMap(parse)
    }

    static func parse(_ message: NetlinkMessage) -> NetworkEvent? {
        switch Int32(message.type) {
        case Int32(RTM_NEWLINK), Int32(RTM_DELLINK):
            guard let header = message.familyHeader(ifinfomsg.self) else { return nil }
            let attributes = message.attributes(after: ifinfomsg.self)
            return .link(index: header.ifi_index, name: attributes.string(IFLA_IFNAME) ?? "",
                         up: header.ifi_flags & UInt32(IFF_UP) != 0, running: header.ifi_flags & UInt32(IFF_RUNNING) != 0,
                         removed: message.type == RTM_DELLINK)
        case Int32(RTM_NEWADDR), Int32(RTM_DELADDR):
            guard let header = message.familyHeader(ifaddrmsg.self) else { return nil }
            let attributes = message.attributes(after: ifaddrmsg.self)
            guard let raw = attributes[IFA_LOCAL] ?? attributes[IFA_ADDRESS], let address = Self.address(raw),
                  let prefix = IPPrefix(address: address, length: Int(header.ifa_prefixlen))
            else { return nil }
            return .address(index: Int32(bitPattern: header.ifa_index), address: prefix, removed: message.type == RTM_DELADDR)
        case Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE):
            guard let header = message.familyHeader(rtmsg.self),
                  header.rtm_family == UInt8(AF_INET) || header.rtm_family == UInt8(AF_INET6)
            else { return nil }
            let attributes = message.attributes(after: rtmsg.self)
            let any: IPAddress = header.rtm_family == UInt8(AF_INET) ? .v4(0) : .v6(0, 0)
            let destination = attributes[RTA_DST.rawValue].flatMap(Self.address) ?? any
            guard destination.isIPv4 == any.isIPv4,
                  let prefix = IPPrefix(address: destination, length: Int(header.rtm_dst_len))
            else { return nil }
            return .route(table: attributes.uint32(RTA_TABLE.rawValue) ?? UInt32(header.rtm_table), destination: prefix,
                          interface: attributes.uint32(RTA_OIF.rawValue).map { Int32(bitPattern: $0) },
                          gateway: attributes[RTA_GATEWAY.rawValue].flatMap(Self.address),
                          removed: message.type == RTM_DELROUTE)
        default:
            return nil
        }
    }

    private static func address(_ raw: [UInt8]) -> IPAddress? {
        raw.count == 4 || raw.count == 16 ? IPAddress(bytes: raw) : nil
    }
}
