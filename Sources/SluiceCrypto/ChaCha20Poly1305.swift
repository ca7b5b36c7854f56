import CGcrypt
import CSodium

/// The AEAD of one direction's carrier records (docs/protocol.md §2) and UDP path packets (§8, through
/// `PathCipher`): ChaCha20-Poly1305 as RFC 8439
/// §2.8 defines it (96-bit nonce, tag over the additional data and the ciphertext), through
/// libgcrypt's public, documented cipher interface (`GCRY_CIPHER_CHACHA20` in
/// `GCRY_CIPHER_MODE_POLY1305`: `gcry_cipher_open`, `setkey`, `setiv`, `authenticate`,
/// `encrypt`/`decrypt`, `gettag`/`checktag`), from the shared libgcrypt20 Debian maintains, so that
/// its security updates reach Sluice.
///
/// Why libgcrypt: it is the fastest public ChaCha20-Poly1305 on Debian. Its x86-64 code runs
/// ChaCha20 and Poly1305 in one stitched AVX2 pass where libsodium makes two passes; in
/// `make microbench MICROBENCH_ARGS=records` it seals a 64 KiB record at about twice libsodium's
/// speed and opens it at about twice, and `Benchmarks/e2e/ab.py` found 22–27 % less CPU per GB
/// through the whole tunnel (figures in README.md, "Security"). It costs about 1.0 MiB of a client's
/// resident memory (mostly its initialisation, see `Gcrypt`; README.md, "Memory"). The handshake,
/// the length mask and the rekey stay on libsodium.
///
/// One value per sealer or opener, owning one cipher handle for its whole life: a record costs a
/// `setiv` (which also derives that record's Poly1305 key), not an open and close; a rekey costs a
/// `setkey`. Closing the handle (deinit) lets libgcrypt wipe the key schedule it holds.
/// Noncopyable, because two copies would close one handle twice. Confined to the owner's thread.
///
/// Both calls work in place (`out` may equal `plaintext` / `ciphertext`). `open` cannot check the tag
/// before decrypting: libgcrypt's Poly1305 mode authenticates the ciphertext while it decrypts, in
/// the same pass, and offers no call that only authenticates (computing the Poly1305 key by hand
/// would be the hand-composed construction this file exists to avoid). So `open` decrypts into
/// `out`, checks the tag (in constant time, `gcry_cipher_checktag`), and on failure wipes `out`
/// before returning false: no byte that did not authenticate is ever released, and `out` is left
/// zeroed.
struct ChaCha20Poly1305: ~Copyable {
    private let handle: gcry_cipher_hd_t

    /// A handle for ChaCha20-Poly1305 under `key` (32 bytes).
    init(key: UnsafePointer<UInt8>) {
        handle = Self.openHandle()
        Self.setKey(key, on: handle)
    }

    /// A handle for ChaCha20-Poly1305 under `key`.
    init(key: SymmetricKey) {
        let handle = Self.openHandle()
        key.withUnsafeBytes { Self.setKey($0.baseAddress!.assumingMemoryBound(to: UInt8.self), on: handle) }
        self.handle = handle
    }

    deinit { gcry_cipher_close(handle) }

    private static func openHandle() -> gcry_cipher_hd_t {
        Gcrypt.ensureInitialized()
        var handle: gcry_cipher_hd_t?
        let error = gcry_cipher_open(&handle, Int32(GCRY_CIPHER_CHACHA20.rawValue), Int32(GCRY_CIPHER_MODE_POLY1305.rawValue), 0)
        guard error == 0, let handle else {
            fatalError("libgcrypt refused ChaCha20-Poly1305 (gcry_cipher_open: \(Gcrypt.describe(error))): "
                       + "Sluice's records need it; a libgcrypt in FIPS mode does not offer it")
        }
        return handle
    }

    /// Replaces the key (a rekey). Cannot fail for a 32-byte key; the first call in a process runs
    /// libgcrypt's ChaCha20 self-test, whose failure is fatal.
    func setKey(_ key: UnsafePointer<UInt8>) { Self.setKey(key, on: handle) }

    private static func setKey(_ key: UnsafePointer<UInt8>, on handle: gcry_cipher_hd_t) {
        let error = gcry_cipher_setkey(handle, key, SymmetricKey.byteCount)
        precondition(error == 0, "libgcrypt's ChaCha20 refused a 32-byte key (gcry_cipher_setkey: \(Gcrypt.describe(error)))")
    }

    /// Seals `length` bytes from `plaintext` into `out` and writes the 16-byte tag to `tag`,
    /// authenticating the `aadLength` bytes at `aad` as well.
    @inline(__always)
    func seal(_ out: UnsafeMutablePointer<UInt8>, tag: UnsafeMutablePointer<UInt8>, plaintext: UnsafePointer<UInt8>,
              length: Int, aad: UnsafePointer<UInt8>, aadLength: Int, nonce: UnsafePointer<UInt8>) {
        start(aad: aad, aadLength: aadLength, nonce: nonce)
        // In place, libgcrypt wants no input buffer (its manual, gcry_cipher_encrypt).
        let error = out == plaintext
            ? gcry_cipher_encrypt(handle, out, length, nil, 0)
            : gcry_cipher_encrypt(handle, out, length, plaintext, length)
        check(error, "gcry_cipher_encrypt")
        check(gcry_cipher_gettag(handle, tag, RecordFormat.tagSize), "gcry_cipher_gettag")
    }

    /// Decrypts `length` bytes of `ciphertext` into `out` and checks `tag` over `aad` and the
    /// ciphertext. Returns false when the tag does not verify, with `out` wiped.
    @inline(__always)
    func open(_ out: UnsafeMutablePointer<UInt8>, ciphertext: UnsafePointer<UInt8>, length: Int,
              tag: UnsafePointer<UInt8>, aad: UnsafePointer<UInt8>, aadLength: Int,
              nonce: UnsafePointer<UInt8>) -> Bool {
        start(aad: aad, aadLength: aadLength, nonce: nonce)
        let error = out == ciphertext
            ? gcry_cipher_decrypt(handle, out, length, nil, 0)
            : gcry_cipher_decrypt(handle, out, length, ciphertext, length)
        check(error, "gcry_cipher_decrypt")
        guard gcry_cipher_checktag(handle, tag, RecordFormat.tagSize) == 0 else {
            sodium_memzero(out, length)
            return false
        }
        return true
    }

    /// Starts a record: its nonce (which resets the Poly1305 state and derives the record's
    /// Poly1305 key), then its additional data.
    @inline(__always)
    private func start(aad: UnsafePointer<UInt8>, aadLength: Int, nonce: UnsafePointer<UInt8>) {
        check(gcry_cipher_setiv(handle, nonce, 12), "gcry_cipher_setiv")
        check(gcry_cipher_authenticate(handle, aad, aadLength), "gcry_cipher_authenticate")
    }

    /// The calls above fail only on misuse (a wrong length, a call out of order), never on input a
    /// peer controls: a failure is a bug in this file.
    @inline(__always)
    private func check(_ error: gcry_error_t, _ call: StaticString) {
        precondition(error == 0, "\(call) failed: \(Gcrypt.describe(error))")
    }
}
