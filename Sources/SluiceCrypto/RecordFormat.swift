/// The record layer of a carrier (docs/protocol.md §2), explained once here.
///
/// After the handshake each direction is a stream of records:
///
/// ```
/// +----------------------+------------------------------------------------+
/// | encrypted length (2) | ChaCha20-Poly1305 ciphertext (length) + tag (16) |
/// +----------------------+------------------------------------------------+
/// ```
///
/// Record `n` (counting from 0 per direction) uses nonce `n` — 4 zero bytes and `n` as a
/// little-endian u64. The big-endian length is XORed with the first two bytes of the ChaCha20-IETF
/// keystream under the length key `HMAC-SHA256(k, "sluice length")` and the same nonce, so a
/// passive observer sees no record boundaries in clear; the payload is sealed under `k` with those
/// two encrypted bytes as additional data, so altering them fails authentication. Every
/// `rekeyInterval` records the direction's key becomes Noise's `REKEY(k)` and the length key is
/// derived again; the counter never resets and a direction closes at 2^63 records.
///
/// `RecordSealer` writes records, `RecordOpener` reads them out of an arbitrary split byte stream;
/// both keep their keys in one fixed allocation (`RecordKeySchedule`) and allocate nothing per
/// record, because this is the per-packet path of a multi-Gbit/s tunnel.
public enum RecordFormat {
    /// The encrypted length field.
    public static let lengthFieldSize = 2
    /// The Poly1305 tag after the ciphertext.
    public static let tagSize = 16
    /// Bytes a record adds to its plaintext: the length field and the tag.
    public static let overhead = lengthFieldSize + tagSize
    /// The largest plaintext, chosen so that a whole record is at most 65,537 bytes.
    public static let maxPlaintextLength = 65_519
    /// The largest record on the wire.
    public static let maxRecordLength = maxPlaintextLength + overhead
    /// Records per key before both ends rekey that direction (2^20).
    public static let defaultRekeyInterval: UInt64 = 1 << 20
    /// The first counter a direction may not use: reaching it closes the carrier.
    public static let counterLimit: UInt64 = 1 << 63

    /// The wire size of a record carrying `plaintextLength` bytes.
    @inline(__always)
    public static func recordLength(plaintextLength: Int) -> Int { plaintextLength + overhead }
}
