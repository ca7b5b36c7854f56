import SluiceWire

/// Readers for the TUN device's name, addresses and routes.
extension Settings {
    /// `interfaceName` for a flag that may be absent (`down`, `exec`, `cgroup`: "the only tunnel").
    func optionalInterfaceName(_ flag: String) throws(ConfigError) -> String? {
        value(flag) == nil ? nil : try interfaceName(flag)
    }

    /// Linux's rules for an interface name (`dev_valid_name`): 1 to 15 bytes, not "." or "..", no '/',
    /// ':' or whitespace.
    func interfaceName(_ flag: String) throws(ConfigError) -> String {
        let raw = try required(flag)
        let name = raw.text
        let valid = (1...15).contains(name.utf8.count) && name != "." && name != ".."
            && !name.unicodeScalars.contains { $0 == "/" || $0 == ":" || $0.properties.isWhitespace }
        guard valid else {
            throw .invalidValue(raw.origin, value: name,
                                expected: "a usable interface name: 1 to 15 bytes, no '/', ':' or spaces (such as sluice0)")
        }
        return name
    }

    /// An address to put on the TUN device, with its prefix length (host bits are the point). A bare
    /// address means a host prefix (/32, /128).
    func interfaceAddress(_ raw: (text: String, origin: SettingOrigin)) throws(ConfigError) -> IPPrefix {
        guard let prefix = IPPrefix(raw.text) else {
            throw .invalidValue(raw.origin, value: raw.text,
                                expected: "an interface address with prefix length, such as 198.18.0.1/30 or fd53::1/126")
        }
        let address = prefix.address
        let problem: String?
        if address.isUnspecified {
            problem = "the unspecified address"
        } else if address.isLoopback {
            problem = "a loopback address"
        } else if address.isMulticast {
            problem = "a multicast address"
        } else if address.isIPv4, prefix.length <= 30, address == prefix.network {
            problem = "the network address of \(prefix.canonical)"
        } else if address.isIPv4, prefix.length <= 30, address == prefix.broadcast {
            problem = "the broadcast address of \(prefix.canonical)"
        } else {
            problem = nil
        }
        if let problem {
            throw .invalidValue(raw.origin, value: raw.text,
                                expected: "a usable interface address: \(address) is \(problem); pick a host address such as 198.18.0.1/30")
        }
        return prefix
    }

    /// A destination prefix for the tunnel: no bits set beyond the prefix length.
    func route(_ raw: (text: String, origin: SettingOrigin)) throws(ConfigError) -> IPPrefix {
        guard let prefix = IPPrefix(raw.text) else {
            throw .invalidValue(raw.origin, value: raw.text, expected: "a prefix such as 10.20.0.0/24 or fd20::/64")
        }
        guard prefix.address == prefix.network else {
            throw .routeHasHostBits(raw.origin, value: raw.text, suggestion: prefix.canonical.description)
        }
        return prefix
    }
}
