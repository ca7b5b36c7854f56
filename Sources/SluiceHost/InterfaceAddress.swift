import CSluiceHostShims
import Glibc
import SluiceWire

/// An address assigned to an interface with its prefix length, such as `10.20.0.1/24 dev sluice0`
/// (what `ip addr add 10.20.0.1/24 dev sluice0` installs).
public struct InterfaceAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address and prefix length; host bits are kept (they are the address).
    public var prefix: IPPrefix
    /// The interface name.
    public var interface: String

    public init(_ prefix: IPPrefix, on interface: String) {
        self.prefix = prefix
        self.interface = interface
    }

    public var description: String { "\(prefix) dev \(interface)" }
}

/// Address operations (`RTM_NEWADDR`, `RTM_DELADDR`, `RTM_GETADDR`).
extension NetlinkSocket {
    /// Adds `address`; fails with `EEXIST` if it is there already. IPv6 addresses get `IFA_F_NODAD`
    /// so they are usable at once instead of after duplicate address detection.
    public func add(_ address: InterfaceAddress) throws(HostError) {
        let request = try addressMessage(address, type: RTM_NEWADDR, flags: NLM_F_CREATE | NLM_F_EXCL)
        try execute(request, operation: "add address \(address)")
    }

    /// Deletes `address`; fails with `EADDRNOTAVAIL` if it is not there.
    public func delete(_ address: InterfaceAddress) throws(HostError) {
        let request = try addressMessage(address, type: RTM_DELADDR, flags: 0)
        try execute(request, operation: "delete address \(address)")
    }

    /// The IPv4 and IPv6 addresses on `interface`.
    public func addresses(on interface: String) throws(HostError) -> [InterfaceAddress] {
        let index = try interfaceIndex(named: interface)
        let request = NetlinkMessage(type: RTM_GETADDR, flags: 0, header: ifaddrmsg(ifa_family: UInt8(AF_UNSPEC), ifa_prefixlen: 0, ifa_flags: 0, ifa_scope: 0, ifa_index: 0))
        return try dump(request, operation: "list addresses of \(interface)").compactMap { message in
            guard message.type == RTM_NEWADDR, let header = message.familyHeader(ifaddrmsg.self),
                header.ifa_index == UInt32(bitPattern: index)
            else { return nil }
            let attributes = message.attributes(after: ifaddrmsg.self)
            guard let raw = attributes[IFA_LOCAL] ?? attributes[IFA_ADDRESS], raw.count == 4 || raw.count == 16,
                let prefix = IPPrefix(address: IPAddress(bytes: raw), length: Int(header.ifa_prefixlen))
            else { return nil }
            return InterfaceAddress(prefix, on: interface)
        }
    }

    func addressMessage(_ address: InterfaceAddress, type: Int, flags: Int32) throws(HostError) -> NetlinkMessage {
        let index = try interfaceIndex(named: address.interface)
        let ip = address.prefix.address
        let addressFlags: UInt32 = ip.isIPv4 ? 0 : UInt32(IFA_F_NODAD)
        var message = NetlinkMessage(
            type: type, flags: flags,
            header: ifaddrmsg(
                ifa_family: ip.addressFamily, ifa_prefixlen: UInt8(address.prefix.length),
                ifa_flags: UInt8(truncatingIfNeeded: addressFlags), ifa_scope: UInt8(RT_SCOPE_UNIVERSE.rawValue),
                ifa_index: UInt32(bitPattern: index)))
        message.append(IFA_LOCAL, bytes: ip.bytes)
        message.append(IFA_ADDRESS, bytes: ip.bytes)
        if addressFlags != 0 { message.append(IFA_FLAGS, uint32: addressFlags) }
        return message
    }
}
