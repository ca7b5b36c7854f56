import Dispatch
import Glibc
import SluiceWire

/// Resolves destination names given as domains in OPEN frames. getaddrinfo blocks, so it runs on a
/// background queue and reports back through a callback (which hops to the loop).
enum NameResolver {
    private static let queue = DispatchQueue(label: "sluice.resolver", attributes: .concurrent)

    static func resolve(_ name: String, _ done: @escaping @Sendable ([IPAddress]) -> Void) {
        queue.async { done(lookup(name)) }
    }

    /// Every address of `name`, IPv4 first (as most clients prefer when both exist), in the
    /// resolver's order otherwise, without repeats; empty when it does not resolve. The relay judges
    /// each against its destination policy and connects to the first allowed.
    static func lookup(_ name: String) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &result) == 0, let first = result else { return [] }
        defer { freeaddrinfo(first) }
        var v4: [IPAddress] = [], v6: [IPAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let ai = cursor {
            if ai.pointee.ai_family == AF_INET, let sa = ai.pointee.ai_addr {
                let addr = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                let address = IPAddress(bytes: withUnsafeBytes(of: addr) { Array($0) })
                if !v4.contains(address) { v4.append(address) }
            } else if ai.pointee.ai_family == AF_INET6, let sa = ai.pointee.ai_addr {
                let addr = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                let address = IPAddress(bytes: withUnsafeBytes(of: addr) { Array($0) })
                if !v6.contains(address) { v6.append(address) }
            }
            cursor = ai.pointee.ai_next
        }
        return v4 + v6
    }
}
