import Glibc

/// libnftables: runs commands in nft's own language (`nft_run_cmd_from_buffer`) inside this process,
/// as one atomic transaction per call. Output and errors are captured in buffers, so a failure
/// becomes a `HostError.nftables` carrying nft's own message.
///
/// The library is loaded on first use (`NFTablesLibrary`).
///
/// Thread rule: one call at a time (the context is not thread-safe); used on the control path only.
final class NFTables {
    private let library: NFTablesLibrary
    private let context: OpaquePointer

    init() throws(HostError) {
        library = try NFTablesLibrary.shared()
        guard let context = library.ctxNew(NFTablesLibrary.defaultFlags) else {
            throw .nftables(operation: "nft_ctx_new", message: "libnftables could not create a context (out of memory?)")
        }
        self.context = context
        // Buffered: nothing is printed; the text comes back from the calls below.
        _ = library.bufferOutput(context)
        _ = library.bufferError(context)
    }

    deinit {
        library.ctxFree(context)
    }

    /// Runs `commands` (one or more nft commands, newline-separated) as one transaction and returns
    /// what nft printed. Throws with nft's error text if any command fails; then none took effect.
    @discardableResult
    func run(_ commands: String, operation: String) throws(HostError) -> String {
        let status = library.runCommands(context, commands)
        let output = library.outputBuffer(context).map { String(cString: $0) } ?? ""
        let errors = library.errorBuffer(context).map { String(cString: $0) } ?? ""
        guard status == 0 else {
            let message = errors.split(separator: "\n").first(where: { $0.hasPrefix("Error:") }).map(String.init)
                ?? errors.split(separator: "\n").first.map(String.init) ?? "nft_run_cmd_from_buffer returned \(status)"
            throw .nftables(operation: operation, message: message)
        }
        return output
    }

    /// Whether the table `family name` exists (`list tables`).
    func tableExists(family: String, name: String) throws(HostError) -> Bool {
        let listing = try run("list tables", operation: "list nftables tables")
        let lines = listing.split(separator: "\n").map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
        return lines.contains("table \(family) \(name)")
    }
}
