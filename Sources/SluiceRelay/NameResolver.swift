import Dispatch
import Glibc
import SluiceWire

/// Resolves destination names given as domains in OPEN frames. getaddrinfo blocks, so it runs on a
/// background queue and reports back through a callback (which hops to the loop).
enum NameResolver {
    private static let queue = DispatchQueue(label: "sluice.resolver", attributes: .concurrent)

    static func resolve(_ name: String, _ done: @escaping @Sendable (IPAddress?) -> Void) {
        queue.async { done(lookup(name)) }
    }

    /// First address of `name`, IPv4 preferred (as most clients do when both exist).
    static func lookup(_ name: String) -> IPAddress? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &result) == 0, let first = result else { return nil }
        defer { freeaddrinfo(first) }
        var v6: IPAddress?
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let ai = cursor {
            if ai.pointee.ai_family == AF_INET, let sa = ai.pointee.ai_addr {
                let addr = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                return IPAddress(bytes: withUnsafeBytes(of: addr) { Array($0) })
            }
            if ai.pointee.ai_family == AF_INET6, v6 == nil, let sa = ai.pointee.ai_addr {
                let addr = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                v6 = IPAddress(bytes: withUnsafeBytes(of: addr) { Array($0) })
            }
            cursor = ai.pointee.ai_next
        }
        return v6
    }
}
