import CSluiceAEAD
import CSodium
import XCTest
@testable import SluiceCrypto
import SluiceIO

/// Records are sealed and opened with Sluice's RFC 8439 construction over OpenSSL's ChaCha20 and
/// Poly1305 assembly (CSluiceAEAD). These tests hold it to RFC 8439's vector and to libsodium's
/// ChaCha20-Poly1305, record by record, at the sizes the known-answer test does not reach — whole
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

    /// RFC 8439 §2.8.2: the AEAD test vector, sealed and opened in place; a flipped tag, AAD or
    /// ciphertext bit fails and leaves the buffer as it was.
    func testRFC8439Vector() {
        XCTAssertEqual(sluice_aead_self_check(), 1)
        let key = Array(UInt8(0x80)...UInt8(0x9f))
        let nonce = Hex.decode("070000004041424344454647")
        let aad = Hex.decode("50515253c0c1c2c3c4c5c6c7")
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let ciphertext = "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b"
            + "1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4d"
            + "ef08e4b7a9de576d26586cec64b6116"
        var text = plaintext
        var tag = [UInt8](repeating: 0, count: 16)
        sluice_aead_seal(&text, &tag, text, text.count, aad, aad.count, nonce, key)
        XCTAssertEqual(Hex.encode(text), ciphertext)
        XCTAssertEqual(Hex.encode(tag), "1ae10b594f09e26a7e902ecbd0600691")

        for (field, flip) in [("tag", 0), ("aad", 1), ("ciphertext", 2)] {
            var t = text, g = tag, a = aad
            switch flip {
            case 0: g[15] ^= 1
            case 1: a[0] ^= 0x80
            default: t[57] ^= 4
            }
            let before = t
            XCTAssertEqual(sluice_aead_open(&t, t, t.count, g, a, a.count, nonce, key), -1, "a flipped \(field) bit")
            XCTAssertEqual(t, before, "nothing is decrypted when the \(field) does not authenticate")
        }
        XCTAssertEqual(sluice_aead_open(&text, text, text.count, tag, aad, aad.count, nonce, key), 0)
        XCTAssertEqual(text, plaintext)
    }
}
