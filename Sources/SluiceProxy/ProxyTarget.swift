import SluiceMux
import SluiceWire

/// Where a proxy client wants to go, from what it wrote: a SOCKS5 address, CONNECT's `host:port`,
/// or the authority of an absolute-form URL. A name stays a name: the relay resolves it
/// (docs/protocol.md §3, addrType 3), so no DNS query leaves this host.
enum ProxyTarget {
    /// `host:port`, `[v6]:port`, or `host` with `defaultPort`; nil when the host is neither an IP
    /// literal nor a name the protocol can carry, or the port is not 1 to 65535.
    static func destination(authority: Substring, defaultPort: UInt16?) -> Destination? {
        var host = authority
        var port = defaultPort
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let p = UInt16(rest.dropFirst()), p != 0 else { return nil }
                port = p
            }
            guard let address = IPAddress(String(host)), !address.isIPv4 else { return nil }
            return port.map { Destination(host: .ip(address), port: $0) }
        }
        if let colon = authority.lastIndex(of: ":") {
            guard let p = UInt16(authority[authority.index(after: colon)...]), p != 0 else { return nil }
            host = authority[..<colon]
            port = p
        }
        guard let port, !host.isEmpty else { return nil }
        if let address = IPAddress(String(host)), address.isIPv4 { return Destination(host: .ip(address), port: port) }
        let name = String(host)
        guard Destination.isValidDomain(name) else { return nil }
        return Destination(host: .domain(name), port: port)
    }
}
