import Glibc

/// libnftables (`libnftables.so.1`, Debian package libnftables1), opened with `dlopen` the first time
/// a firewall is needed, instead of linked.
///
/// Why: linked, it maps libnftables and what it pulls in (libnftnl, libmnl, libxtables, libjansson,
/// libgmp) into every Sluice process, ~0.6 MB of resident memory, while only `up --kill-switch`,
/// `--no-ipv6`, `--app-cgroup` (and `down` after them) use it; the relay never does. The signatures
/// below are those of `<nftables/libnftables.h>`, whose ABI the soname `.1` fixes.
struct NFTablesLibrary: Sendable {
    /// The soname, as `dlopen` looks it up.
    static let soname = "libnftables.so.1"

    /// `nft_ctx_new(NFT_CTX_DEFAULT)`.
    static let defaultFlags: UInt32 = 0

    let ctxNew: @convention(c) (UInt32) -> OpaquePointer?
    let ctxFree: @convention(c) (OpaquePointer) -> Void
    let bufferOutput: @convention(c) (OpaquePointer) -> Int32
    let bufferError: @convention(c) (OpaquePointer) -> Int32
    let runCommands: @convention(c) (OpaquePointer, UnsafePointer<CChar>) -> Int32
    let outputBuffer: @convention(c) (OpaquePointer) -> UnsafePointer<CChar>?
    let errorBuffer: @convention(c) (OpaquePointer) -> UnsafePointer<CChar>?

    /// The library, loaded once per process (the handle is never closed), or why it could not be.
    static func shared() throws(HostError) -> NFTablesLibrary {
        try loaded.get()
    }

    private static let loaded: Result<NFTablesLibrary, HostError> = {
        do throws(HostError) { return .success(try load()) } catch { return .failure(error) }
    }()

    private static func load() throws(HostError) -> NFTablesLibrary {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            throw .nftables(operation: "load \(soname)", message: "\(lastError()) — install libnftables1 (Debian, Ubuntu), or leave out --kill-switch, --no-ipv6 and --app-cgroup")
        }
        func symbol<T>(_ name: String, as type: T.Type) throws(HostError) -> T {
            guard let address = dlsym(handle, name) else {
                throw .nftables(operation: "load \(soname)", message: "\(lastError()) — this libnftables is too old or not nft's")
            }
            return unsafeBitCast(address, to: type)
        }
        return NFTablesLibrary(
            ctxNew: try symbol("nft_ctx_new", as: (@convention(c) (UInt32) -> OpaquePointer?).self),
            ctxFree: try symbol("nft_ctx_free", as: (@convention(c) (OpaquePointer) -> Void).self),
            bufferOutput: try symbol("nft_ctx_buffer_output", as: (@convention(c) (OpaquePointer) -> Int32).self),
            bufferError: try symbol("nft_ctx_buffer_error", as: (@convention(c) (OpaquePointer) -> Int32).self),
            runCommands: try symbol("nft_run_cmd_from_buffer", as: (@convention(c) (OpaquePointer, UnsafePointer<CChar>) -> Int32).self),
            outputBuffer: try symbol("nft_ctx_get_output_buffer", as: (@convention(c) (OpaquePointer) -> UnsafePointer<CChar>?).self),
            errorBuffer: try symbol("nft_ctx_get_error_buffer", as: (@convention(c) (OpaquePointer) -> UnsafePointer<CChar>?).self))
    }

    private static func lastError() -> String {
        dlerror().map { String(cString: $0) } ?? "unknown dlopen error"
    }
}
