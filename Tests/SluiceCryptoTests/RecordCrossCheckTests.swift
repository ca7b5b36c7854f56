import CSodium
import XCTest
@testable import SluiceCrypto

/// Records are sealed and opened with OpenSSL's ChaCha20-Poly1305 (`RecordAEAD`). These tests hold
/// it to libsodium's, record by record, at the sizes the known-answer test does not reach — whole
/// 64 KiB records and the lengths where vectorised code changes path — both ways.
final class RecordCrossCheckTests: XCTestCase {
    let key = try! SymmetricKey(bytes: (0..<32).map { UInt8($0 &* 7 &+ 3) })
    let sizes = [1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 511, 512, 1023, 1024, 4095, 4096, 16_384,
                 16_385, 65_518, RecordFormat.maxPlaintextLength]

    func nonce(_ counter: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + withUnsafeBytes(of: counter.littleEndian, Array.init)
    }

    /// The two-byte length mask of docs/protocol.md §2, computed with libsodium alone.
    func lengthMask(_ counter: UInt64) -> UInt16 {
        let label = Array("sluice length".utf8)
        var lengthKey = [UInt8](repeating: 0, count: 32)
        crypto_auth_hmacsha256(&lengthKey, label, UInt64(label.count), key.bytes)
        var out: [UInt8] = [0, 0]
        crypto_stream_chacha20_ietf(&out, 2, nonce(counter), lengthKey)
        return UInt16(out[0]) << 8 | UInt16(out[1])
    }

    func plaintext(_ size: Int) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) } }

    func testSealedRecordsOpenWithLibsodium() throws {
        let sealer = RecordSealer(key: key)
        for (counter, size) in sizes.enumerated() {
            let out = ByteQueue()
            try sealer.seal(plaintext(size), into: out)
            let record = Array(out.readableBytes)
            XCTAssertEqual(record.count, size + RecordFormat.overhead)
            XCTAssertEqual(UInt16(record[0]) << 8 | UInt16(record[1]), UInt16(size) ^ lengthMask(UInt64(counter)))
            var opened = [UInt8](repeating: 0, count: size)
            let rc = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                &opened, nil, Array(record[2..<(2 + size)]), UInt64(size), Array(record[(2 + size)...]),
                Array(record[0..<2]), 2, nonce(UInt64(counter)), key.bytes)
            XCTAssertEqual(rc, 0, "libsodium rejects the \(size)-byte record")
            XCTAssertEqual(opened, plaintext(size), "\(size)-byte record")
        }
    }

    func testLibsodiumRecordsOpen() throws {
        let opener = RecordOpener(key: key)
        for (counter, size) in sizes.enumerated() {
            let masked = UInt16(size) ^ lengthMask(UInt64(counter))
            let header: [UInt8] = [UInt8(masked >> 8), UInt8(truncatingIfNeeded: masked)]
            var body = [UInt8](repeating: 0, count: size + RecordFormat.tagSize)
            body.withUnsafeMutableBufferPointer { out in
                _ = crypto_aead_chacha20poly1305_ietf_encrypt_detached(
                    out.baseAddress!, out.baseAddress! + size, nil, plaintext(size), UInt64(size),
                    header, 2, nil, nonce(UInt64(counter)), key.bytes)
            }
            opener.feed(header + body)
            XCTAssertEqual(try opener.nextRecord().map(Array.init), plaintext(size), "\(size)-byte record")
        }
        XCTAssertEqual(opener.counter, UInt64(sizes.count))
    }
}
