import CSodium

/// A fixed-size buffer of secret bytes — a private key, a PSK, a cipher key, a chaining key, a DH
/// result — zeroed with `sodium_memzero` when the last reference to it goes.
///
/// A class, not an array: every copy of a key value shares this one buffer, which never moves or
/// grows, so exactly one copy exists to wipe. (A `[UInt8]` copied into a struct that is copied
/// again can be wiped only in the copy at hand; see `Secrets` in SluiceBase64.) Immutable after
/// initialisation, hence safe to share across threads.
final class SecretBytes: @unchecked Sendable {
    /// The number of bytes.
    let count: Int
    private let memory: UnsafeMutableRawPointer

    /// A buffer of `count` bytes that `initializer` fills (it starts zeroed).
    init(count: Int, _ initializer: (UnsafeMutableRawBufferPointer) -> Void) {
        self.count = count
        memory = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 16)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: count)
        initializer(UnsafeMutableRawBufferPointer(start: memory, count: count))
    }

    /// A copy of `bytes`.
    convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count) { $0.copyMemory(from: bytes) }
    }

    /// A copy of `bytes`.
    convenience init(copying bytes: [UInt8]) {
        self.init(count: bytes.count) { out in bytes.withUnsafeBytes { out.copyMemory(from: $0) } }
    }

    deinit {
        sodium_memzero(memory, count)
        memory.deallocate()
    }

    /// Lets `body` read the bytes; the pointer is valid only inside `body` (a method call keeps
    /// `self` alive for its duration).
    func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: memory, count: count))
    }

    /// Constant-time comparison (`sodium_memcmp`).
    func isEqual(to other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        Sodium.ensureInitialized()
        return withUnsafeBytes { a in other.withUnsafeBytes { b in sodium_memcmp(a.baseAddress, b.baseAddress, count) == 0 } }
    }
}
