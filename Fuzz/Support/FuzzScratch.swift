// Shared by the config and command-line fuzz targets: a scratch directory with key files, auth
// files for `socks` and a client config to point at, the filter for paths a fuzzer must not read, and the checks on a
// parsed command. Compiled into both targets' modules.
import Glibc
@testable import SluiceConfig

final class FuzzScratch: @unchecked Sendable {
    /// Made on first use, entered (it becomes the working directory) and removed at exit.
    static let shared = FuzzScratch()

    let directory: String

    private init() {
        var template = Array("/tmp/sluice-fuzz-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed") }
        directory = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        _ = made
        let key = "ERERERERERERERERERERERERERERERERERERERERERE=\n"  // 32 bytes of 0x11
        Self.write(directory + "/k.key", key, mode: 0o600)
        Self.write(directory + "/psk.key", "MzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM=\n", mode: 0o600)
        Self.write(directory + "/loose.key", key, mode: 0o644)
        Self.write(directory + "/users", "# sluice socks --auth-file\nalice:pw\n", mode: 0o600)
        Self.write(directory + "/loose-users", "alice:pw\n", mode: 0o644)
        Self.write(directory + "/client.json", """
            {"relay": "10.10.0.2:7000", "relayPublicKey": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
             "privateKey": "k.key", "psk": "psk.key", "tun": "sluice0", "address": ["198.18.0.1/30"],
             "route": ["10.20.0.0/24"], "carriers": 2}
            """, mode: 0o600)
        chdir(directory)
        Self.removeAtExit = directory
        atexit { if let dir = FuzzScratch.removeAtExit { _ = FuzzScratch.removeTree(dir) } }
    }

    nonisolated(unsafe) private static var removeAtExit: String?

    private static func write(_ path: String, _ text: String, mode: mode_t) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
        precondition(fd >= 0, "cannot write \(path)")
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, mode)
        close(fd)
    }

    private static func removeTree(_ dir: String) -> Int32 {
        for name in ["k.key", "psk.key", "loose.key", "users", "loose-users", "client.json"] { unlink(dir + "/" + name) }
        return rmdir(dir)
    }

    /// False when a value could name a file outside the scratch directory: reading a terminal, a
    /// FIFO or a kernel log there would block the fuzzer, not find a bug. So no absolute path but
    /// into the scratch directory, and no "..".
    func isSafe(_ values: [String]) -> Bool {
        !values.contains { ($0.hasPrefix("/") && !$0.hasPrefix(directory + "/")) || $0.contains("..") }
    }

    /// `precondition` that also prints its message in an optimised build, so that a crash says what broke.
    static func require(_ condition: Bool, _ message: @autoclosure () -> String = "") {
        if !condition { fatalError(message()) }
    }

    /// What every accepted command must satisfy.
    static func check(_ command: Command) {
        switch command {
        case .help(let text): require(!text.isEmpty, "empty help")
        case .relay(let config):
            require(config.privateKey.count == 32 && config.allowedClients.allSatisfy { $0.count == 32 })
        case .up(let config):
            require(!config.addresses.isEmpty)
            // Relays with their keys, or a SOCKS5 upstream: one of the two, never both.
            if config.upstream == nil {
                require(!config.relays.isEmpty && config.relays.allSatisfy { $0.publicKey.count == 32 } && config.privateKey?.count == 32)
            } else {
                require(config.relays.isEmpty && config.privateKey == nil && config.psk == nil)
            }
        case .socks(let config):
            require(!config.relays.isEmpty && config.relays.allSatisfy { $0.publicKey.count == 32 } && config.privateKey.count == 32)
        case .bench(let config):
            require(config.privateKey.count == 32 && config.relayPublicKey.count == 32)
        default: break
        }
    }
}
