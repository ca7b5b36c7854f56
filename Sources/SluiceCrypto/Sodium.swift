import CSodium

/// The one place that initialises libsodium.
///
/// `sodium_init()` picks the fastest ChaCha20, Poly1305 and AES-GCM implementations for this CPU and
/// seeds `randombytes`; before it runs, libsodium silently uses the portable reference code and
/// `crypto_aead_aes256gcm_is_available()` answers 0. Every public entry point of this module that
/// reaches libsodium calls `Sodium.ensureInitialized()` first. Swift runs a static initialiser exactly
/// once, even under concurrent first use, so the call is free after the first time.
enum Sodium {
    private static let initialized: Bool = sodium_init() >= 0

    /// Initialises libsodium on first use; a failure is fatal because no crypto can be trusted then.
    @inline(__always)
    static func ensureInitialized() {
        precondition(initialized, "sodium_init() failed: libsodium cannot run on this system")
    }
}
