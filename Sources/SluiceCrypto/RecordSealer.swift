import SluiceIO

/// Writes one direction's records (docs/protocol.md §2; the layout is explained on `RecordFormat`).
///
/// One sealer per carrier direction, built from `TransportKeys.sending`, confined to the thread that
/// writes the carrier. Sealing allocates nothing: it encrypts straight from the caller's plaintext
/// into the caller's `ByteQueue`, or in place in a buffer the caller prepared with headroom and
/// tailroom. After it throws `counterExhausted` the carrier must close; the other errors reject only
/// the one call and change no state.
public final class RecordSealer {
    private var schedule: RecordKeySchedule

    /// - Parameters:
    ///   - key: this end's sending key.
    ///   - rekeyInterval: records per key; the protocol fixes 2^20, tests use small values.
    public convenience init(key: SymmetricKey, rekeyInterval: UInt64 = RecordFormat.defaultRekeyInterval) {
        self.init(key: key, rekeyInterval: rekeyInterval, startingCounter: 0)
    }

    /// Starts at an arbitrary record number: only for tests of the counter limit.
    init(key: SymmetricKey, rekeyInterval: UInt64, startingCounter: UInt64) {
        schedule = RecordKeySchedule(key: key, rekeyInterval: rekeyInterval, counter: startingCounter)
    }

    /// The number of the next record, i.e. how many this sealer has written (from 0).
    public var counter: UInt64 { schedule.counter }

    /// Seals `plaintext` (1...65519 bytes) as the next record and appends the record
    /// (`plaintext.count + 18` bytes) to `output`.
    public func seal(_ plaintext: UnsafeRawBufferPointer, into output: ByteQueue) throws(RecordError) {
        let length = plaintext.count
        try Self.checkLength(length)
        try schedule.checkCounter()
        let record = output.reserveWritable(RecordFormat.recordLength(plaintextLength: length)).baseAddress!
            .assumingMemoryBound(to: UInt8.self)
        sealBody(record: record, plaintext: plaintext.baseAddress!.assumingMemoryBound(to: UInt8.self), length: length)
        output.commit(RecordFormat.recordLength(plaintextLength: length))
    }

    /// Seals `plaintext` as the next record and appends it to `output`.
    public func seal(_ plaintext: [UInt8], into output: ByteQueue) throws(RecordError) {
        // `withUnsafeBytes` rethrows untyped errors, so the typed error travels in a Result.
        try plaintext.withUnsafeBytes { buffer in
            Result { () throws(RecordError) in try seal(buffer, into: output) }
        }.get()
    }

    /// Seals in place, for callers that encode frames directly into their send buffer:
    /// `record` is 2 bytes of headroom, the plaintext, then 16 bytes of tailroom, and becomes the
    /// complete record. The plaintext length is `record.count - 18` and must be 1...65519.
    public func sealInPlace(_ record: UnsafeMutableRawBufferPointer) throws(RecordError) {
        let length = record.count - RecordFormat.overhead
        try Self.checkLength(length)
        try schedule.checkCounter()
        let base = record.baseAddress!.assumingMemoryBound(to: UInt8.self)
        sealBody(record: base, plaintext: base + RecordFormat.lengthFieldSize, length: length)
    }

    /// Writes length field, ciphertext and tag at `record`; `plaintext` may be `record + 2`
    /// (the cipher encrypts in place).
    @inline(__always)
    private func sealBody(record: UnsafeMutablePointer<UInt8>, plaintext: UnsafePointer<UInt8>, length: Int) {
        let masked = UInt16(length) ^ schedule.lengthMask()
        record[0] = UInt8(masked >> 8)
        record[1] = UInt8(truncatingIfNeeded: masked)
        let ciphertext = record + RecordFormat.lengthFieldSize
        schedule.aead.seal(ciphertext, tag: ciphertext + length, plaintext: plaintext, length: length,
                           aad: record, aadLength: RecordFormat.lengthFieldSize, nonce: schedule.nonce)
        schedule.advance()
    }

    @inline(__always)
    private static func checkLength(_ length: Int) throws(RecordError) {
        guard length >= 1, length <= RecordFormat.maxPlaintextLength else { throw .badLength(length) }
    }
}
