import CSodium

/// Noise's `HASH`, `HMAC-HASH` and `HKDF` for SHA256 (revision 34, §4.3 and §5.2), over libsodium.
///
/// Only SHA256 is provided: it is what Sluice's protocol names, and HASHLEN = 32 lets the symmetric
/// state use one key size everywhere. These run a few dozen times per handshake, never per record,
/// so they favour plain arrays over pointer juggling.
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

    /// HMAC-SHA256 with a key of any length over the concatenation of `parts`
    /// (`crypto_auth_hmacsha256_init`, which hashes keys longer than a block as RFC 2104 says).
    static func hmac(key: [UInt8], _ parts: [UInt8]...) -> [UInt8] {
        Sodium.ensureInitialized()
        var state = crypto_auth_hmacsha256_state()
        crypto_auth_hmacsha256_init(&state, key, key.count)
        for part in parts { crypto_auth_hmacsha256_update(&state, part, UInt64(part.count)) }
        var out = [UInt8](repeating: 0, count: length)
        crypto_auth_hmacsha256_final(&state, &out)
        sodium_memzero(&state, MemoryLayout<crypto_auth_hmacsha256_state>.size)
        return out
    }

    /// Noise's HKDF(chaining_key, input_key_material, num_outputs) with num_outputs 2 or 3:
    /// temp_key = HMAC(ck, ikm); output1 = HMAC(temp_key, 0x01);
    /// output_i = HMAC(temp_key, output_{i-1} || i).
    static func hkdf(chainingKey: [UInt8], inputKeyMaterial: [UInt8], outputs: Int) -> [[UInt8]] {
        precondition(outputs == 2 || outputs == 3, "Noise HKDF yields two or three outputs")
        let tempKey = hmac(key: chainingKey, inputKeyMaterial)
        var result: [[UInt8]] = [hmac(key: tempKey, [0x01])]
        for index in 2...outputs {
            result.append(hmac(key: tempKey, result[index - 2], [UInt8(index)]))
        }
        return result
    }
}
