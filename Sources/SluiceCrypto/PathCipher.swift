import CSodium

/// One direction's AEAD of UDP path packets (docs/protocol.md §8): ChaCha20-Poly1305 (IETF) through
/// libsodium's public `crypto_aead_chacha20poly1305_ietf_encrypt_detached` / `_decrypt_detached`,
/// in place, with the packet's clear header as additional data and its counter as the nonce (4 zero
/// bytes, then the counter as a little-endian u64, as Noise and the records lay it out).
///
/// The key lives in one fixed allocation, wiped on release; the per-packet path allocates nothing.
/// Loop-confined. Counters are the caller's: it must never seal two packets with one counter.
public final class PathCipher {
    /// Bytes of the tag after the ciphertext.
    public static let tagLength = 16
    private static let keyOffset = 0
    private static let nonceOffset = 32
    private static let size = 48
    private let memory: UnsafeMutableRawPointer

    public init(key: SymmetricKey) {
        Sodium.ensureInitialized()
        memory = UnsafeMutableRawPointer.allocate(byteCount: Self.size, alignment: 16)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: Self.size)
        key.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: SymmetricKey.byteCount) }
    }

    deinit {
        sodium_memzero(memory, Self.size)
        memory.deallocate()
    }

    /// Seals in place: `packet[0..<headerLength]` is the additional data, the `plaintextLength`
    /// bytes after it are encrypted where they are and followed by the tag. Returns the packet's
    /// whole length; the caller made room for the tag.
    public func seal(_ packet: UnsafeMutableRawBufferPointer, headerLength: Int, plaintextLength: Int, counter: UInt64) -> Int {
        let total = headerLength + plaintextLength + Self.tagLength
        precondition(total <= packet.count, "no room for the tag")
        let base = packet.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let body = base + headerLength
        // Cannot fail: libsodium refuses only messages longer than 2^38 bytes.
        _ = crypto_aead_chacha20poly1305_ietf_encrypt_detached(
            body, body + plaintextLength, nil, body, UInt64(plaintextLength), base, UInt64(headerLength), nil, nonce(counter), key)
        return total
    }

    /// Opens in place: checks the tag over the header and ciphertext and only then decrypts. Returns
    /// the plaintext's length (it starts at `headerLength`), or nil when the packet does not
    /// authenticate; libsodium then zeroes the body rather than leave bytes that did not verify.
    public func open(_ packet: UnsafeMutableRawBufferPointer, headerLength: Int, counter: UInt64) -> Int? {
        let length = packet.count - headerLength - Self.tagLength
        guard length >= 0 else { return nil }
        let base = packet.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let body = base + headerLength
        let rc = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
            body, nil, body, UInt64(length), body + length, base, UInt64(headerLength), nonce(counter), key)
        return rc == 0 ? length : nil
    }

    private var key: UnsafePointer<UInt8> { UnsafePointer((memory + Self.keyOffset).assumingMemoryBound(to: UInt8.self)) }

    private func nonce(_ counter: UInt64) -> UnsafePointer<UInt8> {
        memory.storeBytes(of: counter.littleEndian, toByteOffset: Self.nonceOffset + 4, as: UInt64.self)
        return UnsafePointer((memory + Self.nonceOffset).assumingMemoryBound(to: UInt8.self))
    }
}
