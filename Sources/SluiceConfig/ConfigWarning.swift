import SluiceWire

/// A setting that works but deserves a line in the log. The parser returns these inside the config
/// values instead of printing them; the CLI logs each `description` at warning level.
public enum ConfigWarning: Sendable, Equatable, CustomStringConvertible {
    /// The relay's address lies inside a `--route` prefix. Safe, because carrier sockets carry
    /// `SO_MARK = fwmark` and the policy rule sends marked packets around the tunnel's table, but worth
    /// knowing: with a different fwmark setup the carrier would loop into the tunnel.
    case relayInsideRoute(relay: IPAddress, route: IPPrefix)
    /// A route of one address family while no `--address` has that family: the host may have no
    /// source address to use for it.
    case routeWithoutAddressFamily(route: IPPrefix)
    /// `--route-all` sends this family into the tunnel, but no `--address` has it.
    case routeAllWithoutAddressFamily(ipv4: Bool)

    public var description: String {
        switch self {
        case .relayInsideRoute(let relay, let route):
            return "the relay \(relay) lies inside --route \(route); its carriers stay outside the tunnel only through their fwmark, so keep the fwmark rule in place."
        case .routeWithoutAddressFamily(let route):
            let family = route.address.isIPv4 ? "IPv4" : "IPv6"
            return "--route \(route) is \(family) but no --address is \(family); add an \(family) --address so the host has a source address for it."
        case .routeAllWithoutAddressFamily(let ipv4):
            return ipv4
                ? "--route-all sends IPv4 into the tunnel but no --address is IPv4; add one such as 198.18.0.1/30."
                : "--route-all sends IPv6 into the tunnel but no --address is IPv6; add one such as fd53::1/126, or turn tunnel IPv6 off with --no-ipv6 (IPv6 is then blocked)."
        }
    }
}
