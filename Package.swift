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
    ],
    targets: [
        // System libraries, found through pkg-config (Debian: liblwip-dev, libsodium-dev). libnftables is opened with dlopen (SluiceHost/NFTables.swift).
        .systemLibrary(name: "CLwIP", pkgConfig: "lwip", providers: [.apt(["liblwip-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // The few C helpers for macros, struct fields and headers Swift cannot reach.
        .target(name: "CSluiceShims"),

        .target(name: "SluiceLog"),
        // errno text, the EINTR/EAGAIN syscall wrapper, the monotonic clock: shared by every module that makes syscalls.
        .target(name: "SluiceSystem"),
        .target(name: "SluiceWire", swiftSettings: hotPath),
        // JSON (config files, the state record) without Foundation: see Sources/SluiceJSON/JSONValue.swift.
        .target(name: "SluiceJSON"),
        // Base64 of keys over libsodium's constant-time codec, and wiping of secret bytes.
        .target(name: "SluiceBase64", dependencies: ["CSodium"]),
        .target(name: "SluiceCrypto", dependencies: ["CSodium", "SluiceBase64"], swiftSettings: hotPath),
        .target(name: "SluiceMux", dependencies: ["SluiceWire"], swiftSettings: hotPath),
        .target(name: "SluiceLoop", dependencies: ["CSluiceShims", "SluiceSystem", "SluiceLog"], swiftSettings: hotPath),
        .target(name: "SluiceHost", dependencies: ["CSluiceShims", "SluiceSystem", "SluiceWire", "SluiceJSON", "SluiceLog"]),
        .target(name: "SluiceConfig", dependencies: ["SluiceSystem", "SluiceWire", "SluiceJSON", "SluiceBase64"]),
        .target(name: "SluiceStack", dependencies: ["CLwIP", "SluiceWire", "SluiceLoop", "SluiceLog"], swiftSettings: hotPath),
        .target(name: "SluiceCarrier", dependencies: ["CSluiceShims", "SluiceSystem", "SluiceMux", "SluiceCrypto", "SluiceLoop", "SluiceWire", "SluiceLog"], swiftSettings: hotPath),
        .target(name: "SluiceClient", dependencies: ["SluiceSystem", "SluiceWire", "SluiceStack", "SluiceCarrier", "SluiceMux", "SluiceCrypto", "SluiceLoop", "SluiceHost", "SluiceConfig", "SluiceLog"], swiftSettings: hotPath),
        .target(name: "SluiceRelay", dependencies: ["SluiceSystem", "SluiceCarrier", "SluiceMux", "SluiceCrypto", "SluiceLoop", "SluiceConfig", "SluiceLog"], swiftSettings: hotPath),
        .executableTarget(
            name: "sluice", dependencies: ["CSluiceShims", "SluiceSystem", "SluiceClient", "SluiceRelay", "SluiceConfig", "SluiceCrypto", "SluiceHost", "SluiceLog"],
            // Exported so that liblwip.so's calls resolve to Sluice's faster checksum (CSluiceShims/checksum.c).
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=lwip_standard_chksum"])]),

        .executableTarget(
            name: "MicroBench", dependencies: ["CSluiceShims", "SluiceWire", "SluiceCrypto", "SluiceMux", "SluiceStack"], path: "Benchmarks/MicroBench",
            // As for sluice: lwIP's checksum resolves to CSluiceShims/checksum.c, so the lwip suite measures what sluice runs.
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=lwip_standard_chksum"])]),

        .testTarget(name: "SluiceWireTests", dependencies: ["SluiceWire"]),
        .testTarget(name: "SluiceJSONTests", dependencies: ["SluiceJSON"]),
        .testTarget(name: "SluiceBase64Tests", dependencies: ["SluiceBase64"]),
        .testTarget(name: "SluiceCryptoTests", dependencies: ["SluiceCrypto", "CSodium"], resources: [.copy("Fixtures")]),
        .testTarget(name: "SluiceMuxTests", dependencies: ["SluiceMux", "SluiceCrypto"]),
        .testTarget(name: "SluiceHostTests", dependencies: ["SluiceHost"]),
        .testTarget(name: "SluiceConfigTests", dependencies: ["SluiceConfig"]),
        .testTarget(name: "SluiceClientTests", dependencies: ["SluiceClient", "SluiceWire", "CSluiceShims"]),
        .testTarget(name: "SluiceLoopTests", dependencies: ["SluiceLoop"]),
        .testTarget(name: "SluiceStackTests", dependencies: ["SluiceStack", "SluiceWire", "SluiceLoop"]),
        .testTarget(name: "SluiceRelayTests", dependencies: ["SluiceRelay", "SluiceMux", "SluiceWire", "SluiceLoop"]),
    ]
)
