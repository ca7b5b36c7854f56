import Glibc
import SluiceWire

/// An address of this host that is not loopback, for destinations of in-process tests: the engine
/// drops packets to loopback (an application can never send them through a TUN), so the test
/// servers listen on an address of the host's own. Traffic to it never leaves the host: the kernel
/// delivers it locally, as over loopback.
enum HostAddress {
    /// Added to `lo` when the test process sits in a network namespace of its own with nothing but
    /// loopback (SluiceHostTests move the whole process into one): TEST-NET-1, never routed.
    static let fallback = IPAddress("192.0.2.77")!

    /// The address to use, found once per process; nil when there is none and none may be added.
    static let forTests: IPAddress? = find() ?? addFallbackInPrivateNamespace()

    /// The first IPv4 address of an interface that is up and not loopback; nil when there is none.
    static func find() -> IPAddress? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(first) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            let flags = Int32(bitPattern: entry.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, let sa = entry.pointee.ifa_addr, Int32(sa.pointee.sa_family) == AF_INET else { continue }
            let addr = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            let address = IPAddress(bytes: withUnsafeBytes(of: addr) { Array($0) })
            if !address.isLoopback || address == fallback { return address }
        }
        return nil
    }

    /// As root, in a network namespace that is not the host's (init's), puts `fallback` on `lo`:
    /// the namespace dies with the test process, so nothing of the host changes.
    private static func addFallbackInPrivateNamespace() -> IPAddress? {
        guard geteuid() == 0, inode("/proc/self/ns/net") != inode("/proc/1/ns/net") else { return nil }
        var pid: pid_t = 0
        let words: [String] = ["ip", "addr", "add", "\(fallback)/32", "dev", "lo"]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        guard posix_spawnp(&pid, "ip", nil, nil, argv, environ) == 0 else { return nil }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return status == 0 ? fallback : nil
    }

    private static func inode(_ path: String) -> UInt64 {
        var info = stat()
        return stat(path, &info) == 0 ? UInt64(info.st_ino) : 0
    }
}
