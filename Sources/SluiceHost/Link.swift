import CSluiceHostShims
import Glibc

/// What the kernel reports about one network interface (`RTM_NEWLINK`).
public struct LinkInfo: Equatable, Sendable {
    /// The interface index (`ifi_index`).
    public let index: Int32
    /// The interface name (`IFLA_IFNAME`).
    public let name: String
    /// The MTU in bytes (`IFLA_MTU`).
    public let mtu: Int
    /// The transmit queue length in packets (`IFLA_TXQLEN`): for a TUN, how many packets the kernel
    /// holds for the reader before it drops.
    public let txQueueLength: Int
    /// Whether the administrative `IFF_UP` flag is set (what `ip link set up` sets).
    public let isUp: Bool
}

/// Interface operations: index lookup, state, up/down, MTU, queue length, deletion.
extension NetlinkSocket {
    /// The index of the interface `name` (`if_nametoindex`).
    public func interfaceIndex(named name: String) throws(HostError) -> Int32 {
        try InterfaceName.validate(name)
        let index = if_nametoindex(name)
        guard index != 0 else {
            let code = Glibc.errno
            if code == ENODEV || code == ENXIO { throw .noSuchInterface(name: name) }
            throw .netlinkSocket(operation: "if_nametoindex(\(name))", errno: code)
        }
        return Int32(bitPattern: index)
    }

    /// The state of the interface `name`.
    public func link(named name: String) throws(HostError) -> LinkInfo {
        let index = try interfaceIndex(named: name)
        let request = NetlinkMessage(type: RTM_GETLINK, flags: 0, header: ifinfomsg(ifi_family: UInt8(AF_UNSPEC), __ifi_pad: 0, ifi_type: 0, ifi_index: index, ifi_flags: 0, ifi_change: 0))
        let replies = try execute(request, operation: "get link \(name)")
        guard let info = replies.lazy.compactMap(Self.linkInfo).first else {
            throw .netlinkReply(operation: "get link \(name)", problem: "the kernel sent no link description")
        }
        return info
    }

    /// Every interface in this network namespace.
    public func links() throws(HostError) -> [LinkInfo] {
        let request = NetlinkMessage(type: RTM_GETLINK, flags: 0, header: ifinfomsg())
        return try dump(request, operation: "list links").compactMap(Self.linkInfo)
    }

    /// Sets the administrative state of `name` (`ip link set NAME up|down`).
    public func setLink(_ name: String, up: Bool) throws(HostError) {
        let index = try interfaceIndex(named: name)
        let flag = UInt32(IFF_UP)
        let request = NetlinkMessage(type: RTM_NEWLINK, flags: 0, header: ifinfomsg(ifi_family: UInt8(AF_UNSPEC), __ifi_pad: 0, ifi_type: 0, ifi_index: index, ifi_flags: up ? flag : 0, ifi_change: flag))
        try execute(request, operation: "set link \(name) \(up ? "up" : "down")")
    }

    /// Sets the MTU of `name` (`ip link set NAME mtu N`).
    public func setMTU(_ mtu: Int, of name: String) throws(HostError) {
        try setLinkAttribute(IFLA_MTU, to: mtu, of: name, operation: "set mtu \(mtu) on \(name)")
    }

    /// Sets the transmit queue length of `name` (`ip link set NAME txqueuelen N`).
    public func setTxQueueLength(_ length: Int, of name: String) throws(HostError) {
        try setLinkAttribute(IFLA_TXQLEN, to: length, of: name, operation: "set txqueuelen \(length) on \(name)")
    }

    private func setLinkAttribute(_ type: some BinaryInteger, to value: Int, of name: String, operation: String) throws(HostError) {
        let index = try interfaceIndex(named: name)
        var request = NetlinkMessage(type: RTM_NEWLINK, flags: 0, header: ifinfomsg(ifi_family: UInt8(AF_UNSPEC), __ifi_pad: 0, ifi_type: 0, ifi_index: index, ifi_flags: 0, ifi_change: 0))
        request.append(type, uint32: UInt32(clamping: value))
        try execute(request, operation: operation)
    }

    /// Deletes the interface `name` (`ip link delete NAME`), for devices left behind by a crash,
    /// such as a persistent TUN. Throws `HostError.noSuchInterface` if it does not exist.
    public func deleteLink(named name: String) throws(HostError) {
        try InterfaceName.validate(name)
        var request = NetlinkMessage(type: RTM_DELLINK, flags: 0, header: ifinfomsg())
        request.append(IFLA_IFNAME, string: name)
        do {
            try execute(request, operation: "delete link \(name)")
        } catch where error.errno == ENODEV {
            throw .noSuchInterface(name: name)
        }
    }

    private static func linkInfo(_ message: NetlinkMessage) -> LinkInfo? {
        guard message.type == RTM_NEWLINK, let header = message.familyHeader(ifinfomsg.self) else { return nil }
        let attributes = message.attributes(after: ifinfomsg.self)
        return LinkInfo(
            index: header.ifi_index, name: attributes.string(IFLA_IFNAME) ?? "",
            mtu: Int(attributes.uint32(IFLA_MTU) ?? 0),
            txQueueLength: Int(attributes.uint32(IFLA_TXQLEN) ?? 0),
            isUp: header.ifi_flags & UInt32(IFF_UP) != 0)
    }
}
