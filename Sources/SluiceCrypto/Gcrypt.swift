import CGcrypt

/// The one place that initialises libgcrypt, which seals and opens carrier records and UDP path
/// packets (`ChaCha20Poly1305`).
///
/// libgcrypt's manual ("Initializing the library") asks the application to call
/// `gcry_check_version` before anything else, to say whether it wants secure memory, and to end
/// with `GCRYCTL_INITIALIZATION_FINISHED` before it starts threads. Sluice uses no secure memory:
/// its keys live in memory of its own that it wipes (`SecretBytes`, `RecordKeySchedule`), and
/// libgcrypt wipes a cipher handle's context when it is closed, so `GCRYCTL_DISABLE_SECMEM`
/// (which also silences the manual's warning about an uninitialised pool). When the program that
/// embeds SluiceTunnel has already initialised libgcrypt for itself
/// (`GCRYCTL_INITIALIZATION_FINISHED_P`), its choices stand and only the version is checked.
///
/// Swift runs a static initialiser exactly once, even under concurrent first use, so the
/// initialisation runs once and is free afterwards; the first `RecordSealer` or `RecordOpener`
/// triggers it, on whichever thread builds a carrier's records.
///
/// Memory: initialisation is most of libgcrypt's share of a client's resident memory (README,
/// "Memory"): `gcry_check_version` runs every subsystem's initialiser (ciphers, digests, MACs,
/// public keys, MPI, the CPU feature probe) and no public call avoids it; the first ChaCha20 key
/// runs libgcrypt's ChaCha20 self-test once.
enum Gcrypt {
    private static let version: String? = {
        if sluice_gcry_initialization_finished() != 0 {
            return sluice_gcry_check_version().map { String(cString: $0) }
        }
        guard let version = sluice_gcry_check_version() else { return nil }
        guard sluice_gcry_disable_secure_memory() == 0, sluice_gcry_finish_initialization() == 0 else { return nil }
        return String(cString: version)
    }()

    /// Initialises libgcrypt on first use. A failure is fatal: no record could be sealed or opened.
    @inline(__always)
    static func ensureInitialized() {
        precondition(version != nil, """
            libgcrypt could not be initialised: the installed library is older than the \
            \(String(cString: sluice_gcry_header_version())) Sluice was built against — install libgcrypt20 \
            \(String(cString: sluice_gcry_header_version())) or later
            """)
    }

    /// libgcrypt's text for an error code.
    static func describe(_ error: gcry_error_t) -> String { String(cString: gcry_strerror(error)) }
}
