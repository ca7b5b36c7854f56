/// One direction's AEAD of UDP path packets (docs/protocol.md §8): ChaCha20-Poly1305 (IETF) through
/// libgcrypt (`ChaCha20Poly1305`, as the records), in place, with the packet's clear header as
/// additional data and its counter as the nonce (4 zero bytes, then the counter as a little-endian
/// u64, as Noise and the records lay it out).
///
/// libgcrypt rather than libsodium's `crypto_aead_chacha20poly1305_ietf_*_detached`, which sealed
/// these packets before: a path packet of a UDP request is ~100 bytes, where libsodium's separate
/// ChaCha20 and Poly1305 passes cost more than libgcrypt's stitched one, as they do for records; the
/// bytes on the wire are the same (`PathCipherTests` pins them with a fixture sealed by libsodium).
/// libgcrypt decrypts before it checks the tag, and `ChaCha20Poly1305.open` wipes the body when the tag
/// fails, so no byte that did not authenticate is left readable.
///
/// The cipher handle holds the key (libgcrypt wipes it when the handle closes): about 1.2 KiB of heap
/// per direction of a carrier's path, as for its records. The per-packet path allocates nothing.
/// Loop-confined. Counters are the caller's: it must never seal two packets with one counter.
public final class PathCipher {
    /// Bytes of the tag after the ciphertext.
    public static let tagLength = 16
    private let aead: ChaCha20Poly1305
    private let nonce = UnsafeMutablePointer<UInt8>.allocate(capacity: 12)

    public init(key: SymmetricKey) {
        aead = ChaCha20Poly1305(key: key)
        nonce.initialize(repeating: 0, count: 12)
    }

    deinit { nonce.deallocate() }

    /// Seals in place: `packet[0..<headerLength]` is the additional data, the `plaintextLength`
    /// bytes after it are encrypted where they are and followed by the tag. Returns the packet's
    /// whole length; the caller made room for the tag.
    public func seal(_ packet: UnsafeMutableRawBufferPointer, headerLength: Int, plaintextLength: Int, counter: UInt64) -> Int {
        let total = headerLength + plaintextLength + Self.tagLength
        precondition(total <= packet.count, "no room for the tag")
        let base = packet.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let body = base + headerLength
        aead.seal(body, tag: body + plaintextLength, plaintext: body, length: plaintextLength,
                  aad: base, aadLength: headerLength, nonce: nonce(counter))
        return total
    }

    /// Opens in place: decrypts, checks the tag over the header and ciphertext, and returns the
    /// plaintext's length (it starts at `headerLength`), or nil when the packet does not
    /// authenticate, with the body zeroed rather than left holding bytes that did not verify.
    public func open(_ packet: UnsafeMutableRawBufferPointer, headerLength: Int, counter: UInt64) -> Int? {
        let length = packet.count - headerLength - Self.tagLength
        guard length >= 0 else { return nil }
        let base = packet.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let body = base + headerLength
        let verified = aead.open(body, ciphertext: body, length: length, tag: body + length,
                                 aad: base, aadLength: headerLength, nonce: nonce(counter))
        return verified ? length : nil
    }

    private func nonce(_ counter: UInt64) -> UnsafePointer<UInt8> {
        UnsafeMutableRawPointer(nonce).storeBytes(of: counter.littleEndian, toByteOffset: 4, as: UInt64.self)
        return UnsafePointer(nonce)
    }
}
