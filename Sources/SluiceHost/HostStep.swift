import SluiceWire

/// One change `HostRouting` made and has not undone yet, with what undoing it needs. The state file
/// (`HostState`) keeps the list, so that `sluice down` can undo exactly these after a crash.
public enum HostStep: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The interface was down and was set up.
    case linkUp(interface: String)
    /// The MTU was `previous` and was set to `new`.
    case mtu(interface: String, previous: Int, new: Int)
    /// The transmit queue length was `previous` and was set to `new`.
    case txQueueLength(interface: String, previous: Int, new: Int)
    case address(InterfaceAddress)
    case route(Route)
    case rule(PolicyRule)
    /// The nftables table (`inet sluice`) was created; undone by deleting it.
    case firewall(table: String)
    /// The resolver configuration was replaced.
    case resolver(ResolverBackup)
    /// The cgroup directory was created (with missing parents below `root`); undone by moving its
    /// processes to `root` and removing it with its subgroups.
    case cgroupTree(path: String, root: String)
    /// systemd-resolved was given DNS settings for the link `interface`, whose index was `index`;
    /// undone with `RevertLink` while that index still names that interface.
    case resolvedLink(interface: String, index: Int32)

    /// The change this step made.
    public var description: String {
        switch self {
        case .linkUp(let interface): return "set link \(interface) up"
        case .mtu(let interface, _, let new): return "set mtu \(new) on \(interface)"
        case .txQueueLength(let interface, _, let new): return "set txqueuelen \(new) on \(interface)"
        case .address(let address): return "add address \(address)"
        case .route(let route): return "add route \(route)"
        case .rule(let rule): return "add \(rule)"
        case .firewall(let table): return "add nftables table \(table)"
        case .resolver(let backup): return "replace \(backup.path)"
        case .cgroupTree(let path, _): return "create cgroup \(path)"
        case .resolvedLink(let interface, let index): return "set DNS of link \(interface) (index \(index)) in systemd-resolved"
        }
    }
}

// The netlink values are stored with prefixes and addresses as text ("10.20.0.0/24"), so a state
// file reads like `ip` output and stays valid if the in-memory types change.

extension InterfaceAddress: Codable {
    private enum CodingKeys: String, CodingKey { case prefix, interface }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(try c.decodePrefix(.prefix), on: try c.decode(String.self, forKey: .interface))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(prefix.description, forKey: .prefix)
        try c.encode(interface, forKey: .interface)
    }
}

extension Route: Codable {
    private enum CodingKeys: String, CodingKey { case destination, kind, interface, table, metric }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let destination = try c.decodePrefix(.destination)
        let table = try c.decode(UInt32.self, forKey: .table)
        let metric = try c.decodeIfPresent(UInt32.self, forKey: .metric)
        switch try c.decode(String.self, forKey: .kind) {
        case "device": self.init(destination, dev: try c.decode(String.self, forKey: .interface), table: table, metric: metric)
        case "throw": self.init(throw: destination, table: table, metric: metric)
        case let other: throw DecodingError.dataCorruptedError(forKey: .kind, in: c, debugDescription: "unknown route kind \(other)")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(destination.description, forKey: .destination)
        try c.encode(kind == .throw ? "throw" : "device", forKey: .kind)
        if kind == .device { try c.encode(interface, forKey: .interface) }
        try c.encode(table, forKey: .table)
        try c.encodeIfPresent(metric, forKey: .metric)
    }
}

extension PolicyRule: Codable {
    private enum CodingKeys: String, CodingKey { case family, priority, table, fwmark, fwmask, invert, destination, suppressPrefixLength }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let family: Family
        switch try c.decode(String.self, forKey: .family) {
        case "ipv4": family = .ipv4
        case "ipv6": family = .ipv6
        case let other: throw DecodingError.dataCorruptedError(forKey: .family, in: c, debugDescription: "unknown family \(other)")
        }
        self.init(
            family: family, priority: try c.decode(UInt32.self, forKey: .priority), table: try c.decode(UInt32.self, forKey: .table),
            fwmark: try c.decodeIfPresent(UInt32.self, forKey: .fwmark), fwmask: try c.decodeIfPresent(UInt32.self, forKey: .fwmask) ?? .max,
            invert: try c.decodeIfPresent(Bool.self, forKey: .invert) ?? false,
            destination: try c.contains(.destination) ? c.decodePrefix(.destination) : nil,
            suppressPrefixLength: try c.decodeIfPresent(UInt32.self, forKey: .suppressPrefixLength))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(family == .ipv4 ? "ipv4" : "ipv6", forKey: .family)
        try c.encode(priority, forKey: .priority)
        try c.encode(table, forKey: .table)
        try c.encodeIfPresent(fwmark, forKey: .fwmark)
        if fwmark != nil, fwmask != .max { try c.encode(fwmask, forKey: .fwmask) }
        if invert { try c.encode(true, forKey: .invert) }
        try c.encodeIfPresent(destination?.description, forKey: .destination)
        try c.encodeIfPresent(suppressPrefixLength, forKey: .suppressPrefixLength)
    }
}

private extension KeyedDecodingContainer {
    func decodePrefix(_ key: Key) throws -> IPPrefix {
        let text = try decode(String.self, forKey: key)
        guard let prefix = IPPrefix(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not a prefix: \(text)")
        }
        return prefix
    }
}
