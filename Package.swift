// swift-tools-version:6.0
// Sluice: a userspace tunnel. TUN -> lwIP -> encrypted multiplexed carrier -> relay.
// The module list is the architecture; see README.md ("How it fits together").
import PackageDescription

/// Release builds drop the runtime exclusivity checks (debug builds and `swift test` keep them):
/// perf found swift_beginAccess and its TLS bookkeeping at 8-10 % of the carrier path.
let hotPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]


let package = Package(
    name: "Sluice",
    products: [
        .executable(name: "sluice", targets: ["sluice"]),
        // The client tunnel engine, for embedding behind a packet flow of your own (docs/embedding.md).
        .library(name: "SluiceTunnel", targets: ["SluiceTunnel"]),
    ],
    targets: [
        // System libraries, found through pkg-config (Debian: liblwip-dev, libsodium-dev, libgcrypt20-dev). libnftables is opened with dlopen (SluiceHost/NFTables.swift).
        .systemLibrary(name: "CLwIP", pkgConfig: "lwip", providers: [.apt(["liblwip-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // ChaCha20-Poly1305 of records and UDP path packets (SluiceCrypto/ChaCha20Poly1305.swift says why libgcrypt).
        .systemLibrary(name: "CGcrypt", pkgConfig: "libgcrypt", providers: [.apt(["libgcrypt20-dev"])]),
        // The few C helpers for macros, struct fields and headers Swift cannot reach: epoll, accept4, the UDP
        // error queue, the checksum (engine, loop, sockets) — and apart, what only the Linux host layer needs
        // (TUN ioctls, netlink macros, signalfd), so the engine's dependencies hold none of it.
        .target(name: "CSluiceShims"),
        .target(name: "CSluiceHostShims"),

        .target(name: "SluiceLog"),
        // errno text, the one EINTR/EAGAIN syscall wrapper and would-block result, the monotonic clock.
        .target(name: "SluiceSystem"),
        // Non-blocking sockets and byte queues: what the carrier, the relay, the records and the engine all move bytes with.
        .target(name: "SluiceIO", dependencies: ["CSluiceShims", "SluiceSystem", "SluiceWire", "SluiceLoop"], swiftSettings: hotPath),
        .target(name: "SluiceWire", swiftSettings: hotPath),
        // JSON (config files, the state record) without Foundation: see Sources/SluiceJSON/JSONValue.swift.
        .target(name: "SluiceJSON"),
        // Base64 of keys over libsodium's constant-time codec, and wiping of secret bytes.
        .target(name: "SluiceBase64", dependencies: ["CSodium"]),
        .target(name: "SluiceCrypto", dependencies: ["CGcrypt", "CSodium", "SluiceBase64", "SluiceIO"], swiftSettings: hotPath),
        .target(name: "SluiceMux", dependencies: ["SluiceWire"], swiftSettings: hotPath),
        // SOCKS5 (RFC 1928, RFC 1929) without I/O: messages both ways, client and server handshakes.
        .target(name: "SluiceSocks", dependencies: ["SluiceWire"]),
        // The PROXY protocol (v1 and v2) without I/O: what a load balancer writes before a relayed connection.
        .target(name: "SluiceProxyProtocol", dependencies: ["SluiceWire"]),
        .target(name: "SluiceLoop", dependencies: ["CSluiceShims", "SluiceSystem", "SluiceLog"], swiftSettings: hotPath),
        .target(name: "SluiceHost", dependencies: ["CSluiceHostShims", "SluiceSystem", "SluiceWire", "SluiceJSON", "SluiceLog"]),
        // Control sockets of running tunnels and relays: `sluice status`, `exec`, `cgroup`.
        .target(name: "SluiceControl", dependencies: ["SluiceSystem", "SluiceLoop", "SluiceLog"]),
        .target(name: "SluiceConfig", dependencies: ["SluiceSystem", "SluiceWire", "SluiceJSON", "SluiceBase64"]),
        .target(name: "SluiceStack", dependencies: ["CLwIP", "CSluiceShims", "SluiceWire", "SluiceLog"], swiftSettings: hotPath),
        .target(name: "SluiceCarrier", dependencies: ["SluiceSystem", "SluiceIO", "SluiceMux", "SluiceCrypto", "SluiceLoop", "SluiceLog", "SluiceWire"], swiftSettings: hotPath),
        // The client engine: lwIP, UDP mappings, flows bridged to carrier streams, reconnects; driven by a PacketFlow.
        // No Linux host code (TUN, netlink, signals, files, cgroups) in its dependencies.
        .target(name: "SluiceTunnel", dependencies: ["CSluiceShims", "SluiceSystem", "SluiceIO", "SluiceWire", "SluiceStack", "SluiceCarrier", "SluiceMux", "SluiceCrypto", "SluiceSocks", "SluiceLoop", "SluiceLog"], swiftSettings: hotPath),
        // `sluice up` on Linux: the engine over a TUN with offloads, HostSetup, the control socket, signals.
        .target(name: "SluiceUp", dependencies: ["CSluiceHostShims", "SluiceSystem", "SluiceIO", "SluiceWire", "SluiceTunnel", "SluiceHost", "SluiceControl", "SluiceJSON", "SluiceLoop", "SluiceLog"], swiftSettings: hotPath),
        // `sluice socks`: a SOCKS5 and HTTP proxy without a TUN whose connections are streams of the relay's carriers.
        .target(name: "SluiceProxy", dependencies: ["SluiceBase64", "SluiceIO", "SluiceLog", "SluiceLoop", "SluiceMux", "SluiceSocks", "SluiceSystem", "SluiceTunnel", "SluiceWire"]),
        // `sluice bench`: carriers and streams to the relay's bench endpoints, no TUN.
        .target(name: "SluiceBench", dependencies: ["SluiceTunnel", "SluiceCarrier", "SluiceMux", "SluiceCrypto", "SluiceIO", "SluiceLoop", "SluiceLog", "SluiceSystem", "SluiceWire"], swiftSettings: hotPath),
        .target(name: "SluiceRelay", dependencies: ["CSluiceHostShims", "CSluiceShims", "SluiceSystem", "SluiceIO", "SluiceCarrier", "SluiceMux", "SluiceCrypto", "SluiceLoop", "SluiceConfig", "SluiceProxyProtocol", "SluiceControl", "SluiceJSON", "SluiceLog", "SluiceWire"], swiftSettings: hotPath),
        .executableTarget(
            name: "sluice", dependencies: ["CSluiceHostShims", "SluiceLoop", "SluiceSystem", "SluiceCarrier", "SluiceSocks", "SluiceTunnel", "SluiceUp", "SluiceBench", "SluiceProxy", "SluiceControl", "SluiceRelay", "SluiceConfig", "SluiceCrypto", "SluiceHost", "SluiceJSON", "SluiceLog", "SluiceWire"],
            // Exported so that liblwip.so's calls resolve to Sluice's faster checksum (CSluiceShims/checksum.c).
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=lwip_standard_chksum"])]),

        // docs/embedding.md's example: the engine behind a packet source of one's own. Built with the package so
        // that it cannot drift from the library.
        .executableTarget(name: "sluice-embed-example", dependencies: ["SluiceTunnel", "SluiceCrypto", "SluiceLoop", "SluiceWire"],
                          path: "Examples/EmbeddedTunnel"),

        .executableTarget(
            name: "MicroBench", dependencies: ["CSluiceShims", "SluiceIO", "SluiceWire", "SluiceCrypto", "SluiceMux", "SluiceStack", "CGcrypt"], path: "Benchmarks/MicroBench",
            // As for sluice: lwIP's checksum resolves to CSluiceShims/checksum.c, so the lwip suite measures what sluice runs.
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=lwip_standard_chksum"])]),

        // What several test targets share: generators, hex fixtures, TCP segments.
        .target(name: "SluiceTestSupport", dependencies: ["SluiceWire"], path: "Tests/SluiceTestSupport"),
        .testTarget(name: "SluiceWireTests", dependencies: ["SluiceWire", "SluiceTestSupport"]),
        .testTarget(name: "SluiceIOTests", dependencies: ["SluiceIO", "SluiceLoop", "SluiceWire", "SluiceSystem", "SluiceTestSupport"]),
        .testTarget(name: "SluiceJSONTests", dependencies: ["SluiceJSON"]),
        .testTarget(name: "SluiceBase64Tests", dependencies: ["SluiceBase64"]),
        .testTarget(name: "SluiceCryptoTests", dependencies: ["SluiceCrypto", "SluiceIO", "SluiceTestSupport", "CSodium"], resources: [.copy("Fixtures")]),
        .testTarget(name: "SluiceMuxTests", dependencies: ["SluiceMux", "SluiceWire", "SluiceTestSupport"]),
        .testTarget(name: "SluiceSocksTests", dependencies: ["SluiceSocks", "SluiceWire", "SluiceTestSupport"]),
        .testTarget(name: "SluiceProxyProtocolTests", dependencies: ["SluiceProxyProtocol", "SluiceWire", "SluiceTestSupport"]),
        .testTarget(name: "SluiceProxyTests", dependencies: ["SluiceProxy", "SluiceMux"]),
        .testTarget(name: "SluiceHostTests", dependencies: ["SluiceHost", "CSluiceHostShims", "SluiceSystem", "SluiceWire"]),
        .testTarget(name: "SluiceConfigTests", dependencies: ["SluiceConfig", "SluiceWire"]),
        .testTarget(name: "SluiceTunnelTests", dependencies: ["SluiceTunnel", "SluiceProxy", "SluiceSocks", "SluiceRelay", "SluiceCrypto", "SluiceIO", "SluiceLoop", "SluiceMux", "SluiceStack", "SluiceSystem", "SluiceWire", "SluiceTestSupport", "CSluiceShims", "CSodium"],
                    linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=lwip_standard_chksum"])]),
        .testTarget(name: "SluiceControlTests", dependencies: ["SluiceControl"]),
        .testTarget(name: "SluiceBenchTests", dependencies: ["SluiceBench", "SluiceWire"]),
        .testTarget(name: "SluiceLoopTests", dependencies: ["SluiceLoop", "SluiceSystem"]),
        .testTarget(name: "SluiceLogTests", dependencies: ["SluiceLog"]),
        .testTarget(name: "SluiceCarrierTests", dependencies: ["SluiceCarrier", "SluiceMux", "SluiceCrypto", "SluiceLoop", "SluiceWire", "SluiceTestSupport"]),
        .testTarget(name: "SluiceStackTests", dependencies: ["SluiceStack", "SluiceWire", "SluiceTestSupport"],
                    // As for sluice, so that lwIP here runs what it runs there (TCPStack.takesUnverifiedSegments).
                    linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=lwip_standard_chksum"])]),
        .testTarget(name: "SluiceRelayTests", dependencies: ["SluiceRelay", "SluiceMux", "SluiceWire", "SluiceLoop", "SluiceIO", "SluiceCrypto", "SluiceProxyProtocol"]),
    ]
)
