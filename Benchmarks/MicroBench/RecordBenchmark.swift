import CGcrypt
import Glibc
import SluiceCrypto
import SluiceIO

/// Throughput of the record layer (docs/protocol.md §2) on one core: seal only, open only, and a
/// seal → feed → open round trip, for 16 KiB records and maximal (65,519-byte, "64 KiB") records.
/// Opening includes copying the bytes into the opener, as a socket read would. The first column is
/// the AEAD the records use (libgcrypt's ChaCha20-Poly1305) alone on the same sizes, so the gap to
/// "seal" is what the record layer adds: the length mask, the counter, the buffer.
enum RecordBenchmark {
    struct Result { let size: Int; let aead: Double; let seal: Double; let open: Double; let roundTrip: Double }

    static func run() {
        let key = try! SymmetricKey(bytes: (0..<32).map { UInt8($0) })
        // SluiceCrypto initialises libgcrypt (and libsodium, for the length mask) on first use, as
        // libgcrypt's manual asks before any other call; the raw AEAD row runs after that.
        _ = RecordSealer(key: key)
        var results: [Result] = []
        for size in [16 * 1024, RecordFormat.maxPlaintextLength] {
            results.append(Result(size: size, aead: aead(size, key), seal: seal(size, key), open: open(size, key),
                                  roundTrip: roundTrip(size, key)))
        }
        print("record size    AEAD GB/s   seal GB/s   open GB/s   seal+open GB/s")
        for r in results {
            print(pad(String(r.size), 11), pad(Bench.format(r.aead), 12), pad(Bench.format(r.seal), 11), pad(Bench.format(r.open), 11),
                  pad(Bench.format(r.roundTrip), 16))
        }
        let json = results.map {
            "{\"record_bytes\":\($0.size),\"aead_gbps\":\(Bench.format($0.aead)),\"seal_gbps\":\(Bench.format($0.seal)),\"open_gbps\":\(Bench.format($0.open)),\"seal_open_gbps\":\(Bench.format($0.roundTrip))}"
        }
        print("{\"benchmark\":\"records\",\"results\":[\(json.joined(separator: ","))]}")
    }

    /// Runs `body` (which processes `bytesPerCall` plaintext bytes) for about a second after a warm-up
    /// and returns GB/s (10^9 bytes per second).
    private static func measure(bytesPerCall: Int, _ body: () -> Void) -> Double {
        for _ in 0..<50 { body() }
        var calls = 0
        let start = Bench.now()
        var elapsed = 0.0
        repeat {
            for _ in 0..<100 { body() }
            calls += 100
            elapsed = Bench.now() - start
        } while elapsed < 1.0
        return Double(calls * bytesPerCall) / elapsed / 1e9
    }

    /// libgcrypt's ChaCha20-Poly1305 alone, in place, through one handle as `ChaCha20Poly1305` uses it:
    /// per record a nonce, the two bytes of additional data, the encryption and the tag.
    private static func aead(_ size: Int, _ key: SymmetricKey) -> Double {
        var buffer = [UInt8](repeating: 0x5a, count: size + RecordFormat.tagSize)
        let nonce = [UInt8](repeating: 0, count: 12)
        let aad: [UInt8] = [0, 0]
        var handle: gcry_cipher_hd_t?
        precondition(gcry_cipher_open(&handle, Int32(GCRY_CIPHER_CHACHA20.rawValue), Int32(GCRY_CIPHER_MODE_POLY1305.rawValue), 0) == 0)
        defer { gcry_cipher_close(handle) }
        key.withUnsafeBytes { _ = gcry_cipher_setkey(handle, $0.baseAddress, 32) }
        return buffer.withUnsafeMutableBufferPointer { b in
            let p = b.baseAddress!
            return measure(bytesPerCall: size) {
                _ = gcry_cipher_setiv(handle, nonce, 12)
                _ = gcry_cipher_authenticate(handle, aad, 2)
                _ = gcry_cipher_encrypt(handle, p, size, nil, 0)
                _ = gcry_cipher_gettag(handle, p + size, RecordFormat.tagSize)
            }
        }
    }

    private static func seal(_ size: Int, _ key: SymmetricKey) -> Double {
        let plaintext = [UInt8](repeating: 0x5a, count: size)
        let sealer = RecordSealer(key: key)
        let out = ByteQueue()
        return plaintext.withUnsafeBytes { p in
            measure(bytesPerCall: size) {
                try! sealer.seal(p, into: out)
                out.consume(out.count)
            }
        }
    }

    /// Seals a batch of records untimed, then times feeding and opening them; about a second in all.
    private static func open(_ size: Int, _ key: SymmetricKey) -> Double {
        let batch = 64
        let plaintext = [UInt8](repeating: 0x5a, count: size)
        let sealer = RecordSealer(key: key)
        let opener = RecordOpener(key: key)
        let stream = ByteQueue(capacity: batch * RecordFormat.recordLength(plaintextLength: size))
        var timed = 0.0
        var bytes = 0
        var rounds = 0
        let deadline = Bench.now() + 1.5
        while Bench.now() < deadline {
            stream.removeAll()
            for _ in 0..<batch { try! sealer.seal(plaintext, into: stream) }
            let start = Bench.now()
            opener.feed(stream.readableBytes)
            while let record = try! opener.nextRecord() { precondition(record.count == size) }
            rounds += 1
            if rounds > 5 { timed += Bench.now() - start; bytes += batch * size } // the first rounds warm up
        }
        return Double(bytes) / timed / 1e9
    }

    private static func roundTrip(_ size: Int, _ key: SymmetricKey) -> Double {
        let plaintext = [UInt8](repeating: 0x5a, count: size)
        let sealer = RecordSealer(key: key)
        let opener = RecordOpener(key: key)
        let wire = ByteQueue()
        return plaintext.withUnsafeBytes { p in
            measure(bytesPerCall: size) {
                try! sealer.seal(p, into: wire)
                opener.feed(wire.readableBytes)
                wire.consume(wire.count)
                while let record = try! opener.nextRecord() { precondition(record.count == size) }
            }
        }
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
