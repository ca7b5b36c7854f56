import CSodium

/// One direction's record keys, counter and cipher (docs/protocol.md §2), shared by `RecordSealer`
/// and `RecordOpener`.
///
/// Everything secret lives in one fixed allocation, made once per carrier and wiped on release, so
/// the per-record path touches no allocator and leaves no key copies in freed arrays; the cipher
/// (`aead`) holds the current payload key in libgcrypt's handle, given again at every rekey.
/// Noncopyable, because two copies would reuse nonces.
struct RecordKeySchedule: ~Copyable {
    // Layout of `memory`: payload key k | length key | record nonce | scratch for rekey and masks.
    private static let keyOffset = 0
    private static let lengthKeyOffset = 32
    private static let nonceOffset = 64
    private static let scratchOffset = 80
    private static let scratchSize = 64
    private static let size = scratchOffset + scratchSize
    /// The HMAC message that turns `k` into the length key.
    private static let lengthLabel: StaticString = "sluice length"

    private let memory: UnsafeMutableRawPointer
    /// The number of the next record; also its nonce.
    private(set) var counter: UInt64
    /// Records per key.
    let rekeyInterval: UInt64
    /// Seals or opens the current record under the current payload key and nonce.
    let aead: ChaCha20Poly1305

    /// Starts at record `counter` (0 except in tests) with `key` as the current payload key.
    init(key: SymmetricKey, rekeyInterval: UInt64, counter: UInt64 = 0) {
        precondition(rekeyInterval > 0, "a rekey interval must be at least one record")
        Sodium.ensureInitialized()
        let memory = UnsafeMutableRawPointer.allocate(byteCount: Self.size, alignment: 16)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: Self.size)
        key.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: SymmetricKey.byteCount) }
        self.memory = memory
        self.counter = counter
        self.rekeyInterval = rekeyInterval
        aead = ChaCha20Poly1305(key: UnsafePointer(memory.assumingMemoryBound(to: UInt8.self) + Self.keyOffset))
        deriveLengthKey()
        writeNonce()
    }

    deinit {
        sodium_memzero(memory, Self.size)
        memory.deallocate()
    }

    /// The current payload key `k` (32 bytes).
    private var key: UnsafePointer<UInt8> { UnsafePointer(bytes(at: Self.keyOffset)) }
    /// The current record's nonce (12 bytes).
    var nonce: UnsafePointer<UInt8> { UnsafePointer(bytes(at: Self.nonceOffset)) }

    /// Throws once the counter reaches 2^63; checked before every record.
    @inline(__always)
    func checkCounter() throws(RecordError) {
        guard counter < RecordFormat.counterLimit else { throw .counterExhausted }
    }

    /// The 16-bit mask XORed onto the current record's big-endian length: the first two bytes of
    /// ChaCha20-IETF(length key, nonce). It costs one ChaCha20 block per record.
    func lengthMask() -> UInt16 {
        let out = bytes(at: Self.scratchOffset)
        crypto_stream_chacha20_ietf(out, 2, nonce, bytes(at: Self.lengthKeyOffset))
        return UInt16(out[0]) << 8 | UInt16(out[1])
    }

    /// Moves to the next record, rekeying when the new counter is a multiple of the interval, so
    /// that records `i·interval ..< (i+1)·interval` all use the i-th key.
    mutating func advance() {
        counter += 1
        if counter % rekeyInterval == 0 { rekey() }
        writeNonce()
    }

    /// Noise REKEY(k): the first 32 bytes of ENCRYPT(k, 2^64-1, "", 32 zero bytes), then a fresh
    /// length key from it.
    private func rekey() {
        let scratch = bytes(at: Self.scratchOffset)
        scratch.initialize(repeating: 0, count: Self.scratchSize)
        // Nonce 2^64-1: four zero bytes, then eight 0xff (the same bytes in either byte order).
        (scratch + 4).initialize(repeating: 0xff, count: 8)
        let block = scratch + 16
        crypto_aead_chacha20poly1305_ietf_encrypt_detached(
            block, block + 32, nil, block, 32, nil, 0, nil, scratch, key)
        bytes(at: Self.keyOffset).update(from: block, count: SymmetricKey.byteCount)
        sodium_memzero(scratch, Self.scratchSize)
        aead.setKey(key)
        deriveLengthKey()
    }

    /// length key = HMAC-SHA256(k, "sluice length").
    private func deriveLengthKey() {
        crypto_auth_hmacsha256(bytes(at: Self.lengthKeyOffset), Self.lengthLabel.utf8Start,
                               UInt64(Self.lengthLabel.utf8CodeUnitCount), key)
    }

    /// Nonce = 4 zero bytes followed by the counter as a little-endian u64.
    private func writeNonce() {
        memory.storeBytes(of: counter.littleEndian, toByteOffset: Self.nonceOffset + 4, as: UInt64.self)
    }

    @inline(__always)
    private func bytes(at offset: Int) -> UnsafeMutablePointer<UInt8> {
        (memory + offset).assumingMemoryBound(to: UInt8.self)
    }
}
