import CSodium

/// Noise's `HASH`, `HMAC-HASH` and `HKDF` for SHA256 (revision 34, §4.3 and §5.2), over libsodium.
///
/// Only SHA256 is provided: it is what Sluice's protocol names, and HASHLEN = 32 lets the symmetric
/// state use one key size everywhere. These run a few dozen times per handshake, never per record.
/// `hash` works on plain arrays (its inputs and output are public); HMAC and HKDF take and give key
/// material, which stays in `SecretBytes` buffers and wiped state.
enum NoiseHash {
    /// HASHLEN for SHA256.
    static let length = 32
    /// BLOCKLEN for SHA256; Noise pads short protocol names to HASHLEN, not BLOCKLEN.
    static let blockLength = 64
    /// The name that goes into the protocol name, e.g. `Noise_IK_25519_ChaChaPoly_SHA256`.
    static let name = "SHA256"

    /// SHA256 of the concatenation of `parts` (`crypto_hash_sha256`), avoiding a joined copy.
    static func hash(_ parts: [UInt8]...) -> [UInt8] {
        Sodium.ensureInitialized()
        var state = crypto_hash_sha256_state()
        crypto_hash_sha256_init(&state)
        for part in parts { crypto_hash_sha256_update(&state, part, UInt64(part.count)) }
        var out = [UInt8](repeating: 0, count: length)
        crypto_hash_sha256_final(&state, &out)
        return out
    }

    /// HMAC-SHA256 under `key` (any length: `crypto_auth_hmacsha256_init` hashes keys longer than a
    /// block, as RFC 2104 says) of the concatenation of `parts`, written to `out` (32 bytes). The
    /// HMAC state, which holds the key, is wiped.
    static func hmac(key: UnsafeRawBufferPointer, _ parts: [UnsafeRawBufferPointer], into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count == length, "HMAC-SHA256 writes 32 bytes")
        Sodium.ensureInitialized()
        var state = crypto_auth_hmacsha256_state()
        crypto_auth_hmacsha256_init(&state, key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count)
        for part in parts where part.count > 0 {
            crypto_auth_hmacsha256_update(&state, part.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
        }
        crypto_auth_hmacsha256_final(&state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        sodium_memzero(&state, MemoryLayout<crypto_auth_hmacsha256_state>.size)
    }

    /// HMAC-SHA256 under `key` of the concatenation of `parts`, for a result that is not secret (the
    /// PSK proof, the tests).
    static func hmac(key: UnsafeRawBufferPointer, _ parts: [UInt8]...) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        out.withUnsafeMutableBytes { out in
            withRawParts(parts) { hmac(key: key, $0, into: out) }
        }
        return out
    }

    /// Noise's HKDF(chaining_key, input_key_material, num_outputs) with num_outputs 2 or 3:
    /// temp_key = HMAC(ck, ikm); output1 = HMAC(temp_key, 0x01);
    /// output_i = HMAC(temp_key, output_{i-1} || i).
    static func hkdf(chainingKey: SecretBytes, inputKeyMaterial: UnsafeRawBufferPointer, outputs: Int) -> [SecretBytes] {
        precondition(outputs == 2 || outputs == 3, "Noise HKDF yields two or three outputs")
        let tempKey = SecretBytes(count: length) { out in
            chainingKey.withUnsafeBytes { hmac(key: $0, [inputKeyMaterial], into: out) }
        }
        var result: [SecretBytes] = []
        tempKey.withUnsafeBytes { key in
            for index in 1...outputs {
                var counter = UInt8(index)
                let output = SecretBytes(count: length) { out in
                    withUnsafeBytes(of: &counter) { counter in
                        if let previous = result.last {
                            previous.withUnsafeBytes { hmac(key: key, [$0, counter], into: out) }
                        } else {
                            hmac(key: key, [counter], into: out)
                        }
                    }
                }
                result.append(output)
            }
        }
        return result
    }

    /// Raw views of `parts` for the duration of `body`.
    private static func withRawParts<R>(_ parts: [[UInt8]], _ body: ([UnsafeRawBufferPointer]) -> R) -> R {
        var views: [UnsafeRawBufferPointer] = []
        func nest(_ index: Int) -> R {
            guard index < parts.count else { return body(views) }
            return parts[index].withUnsafeBytes { view in
                views.append(view)
                return nest(index + 1)
            }
        }
        return nest(0)
    }
}
