import CSodium
import Foundation
import XCTest
@testable import SluiceCrypto
import SluiceIO

/// Records are sealed and opened through libgcrypt's ChaCha20-Poly1305 (`ChaCha20Poly1305`). These tests
/// hold the AEAD call to RFC 8439's vector, and whole records — length mask, nonce, additional data,
/// rekeying — to records computed by an independent implementation (Fixtures/records.py: Python's
/// `cryptography`, i.e. OpenSSL, and `hmac`) at the sizes where vectorised code changes path, up to
/// whole 64 KiB records, both ways. The same fixtures hold for every implementation of the records
/// (OpenSSL's, libsodium's and libgcrypt's ChaCha20-Poly1305 have each passed them), so the wire
/// format is unchanged.
final class RecordCrossCheckTests: XCTestCase {
    struct Fixture: Decodable {
        struct Record: Decodable { let size: Int; let length: String; let tag: String; let sha256: String }
        struct Stream: Decodable { let rekey_interval: UInt64; let records: [Record] }
        let key: String
        let streams: [Stream]
    }

    static func loadFixture() throws -> Fixture {
        let url = try XCTUnwrap(Bundle.module.url(forResource: "records", withExtension: "json", subdirectory: "Fixtures"))
        return try JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
    }

    func plaintext(_ size: Int) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) } }

    func sha256(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: 32)
        crypto_hash_sha256(&out, bytes, UInt64(bytes.count))
        return Hex.encode(out)
    }

    func testSealedRecordsMatchTheIndependentImplementation() throws {
        let fixture = try Self.loadFixture()
        let key = try SymmetricKey(bytes: Hex.decode(fixture.key))
        XCTAssertEqual(fixture.streams.map(\.records.count), [20, 20])
        for stream in fixture.streams {
            let sealer = RecordSealer(key: key, rekeyInterval: stream.rekey_interval)
            for (counter, expected) in stream.records.enumerated() {
                let out = ByteQueue()
                try sealer.seal(plaintext(expected.size), into: out)
                let record = Array(out.readableBytes)
                let label = "record \(counter) (\(expected.size) bytes), rekey every \(stream.rekey_interval)"
                XCTAssertEqual(record.count, expected.size + RecordFormat.overhead, label)
                XCTAssertEqual(Hex.encode(Array(record.prefix(2))), expected.length, label)
                XCTAssertEqual(Hex.encode(Array(record.suffix(16))), expected.tag, label)
                XCTAssertEqual(sha256(record), expected.sha256, label)
            }
        }
    }

    /// The same records, rebuilt from the fixture's plaintexts by sealing, must open — fed whole
    /// and then byte by byte across record boundaries.
    func testIndependentRecordsOpen() throws {
        let fixture = try Self.loadFixture()
        let key = try SymmetricKey(bytes: Hex.decode(fixture.key))
        for stream in fixture.streams {
            let wire = ByteQueue()
            let sealer = RecordSealer(key: key, rekeyInterval: stream.rekey_interval)
            for record in stream.records { try sealer.seal(plaintext(record.size), into: wire) }
            let bytes = Array(wire.readableBytes)
            for piece in [bytes.count, 1_000] {
                let opener = RecordOpener(key: key, rekeyInterval: stream.rekey_interval)
                var opened: [[UInt8]] = []
                var at = 0
                while at < bytes.count {
                    opener.feed(Array(bytes[at..<min(at + piece, bytes.count)]))
                    at += piece
                    while let record = try opener.nextRecord() { opened.append(Array(record)) }
                }
                XCTAssertEqual(opened.map(\.count), stream.records.map(\.size))
                XCTAssertEqual(opened, stream.records.map { plaintext($0.size) }, "rekey every \(stream.rekey_interval)")
            }
        }
    }

    /// RFC 8439 §2.8.2: the AEAD test vector, sealed and opened in place through `ChaCha20Poly1305`; a
    /// flipped tag, AAD or ciphertext bit fails and leaves no unauthenticated byte behind.
    func testRFC8439Vector() {
        let key = Array(UInt8(0x80)...UInt8(0x9f))
        let nonce = Hex.decode("070000004041424344454647")
        let aad = Hex.decode("50515253c0c1c2c3c4c5c6c7")
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let ciphertext = "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b"
            + "1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4d"
            + "ef08e4b7a9de576d26586cec64b6116"
        let aead = ChaCha20Poly1305(key: key)
        var text = plaintext
        var tag = [UInt8](repeating: 0, count: 16)
        text.withUnsafeMutableBufferPointer { t in
            aead.seal(t.baseAddress!, tag: &tag, plaintext: t.baseAddress!, length: t.count, aad: aad,
                      aadLength: aad.count, nonce: nonce)
        }
        XCTAssertEqual(Hex.encode(text), ciphertext)
        XCTAssertEqual(Hex.encode(tag), "1ae10b594f09e26a7e902ecbd0600691")

        func open(_ t: inout [UInt8], _ g: [UInt8], _ a: [UInt8]) -> Bool {
            t.withUnsafeMutableBufferPointer { t in
                aead.open(t.baseAddress!, ciphertext: t.baseAddress!, length: t.count, tag: g, aad: a,
                          aadLength: a.count, nonce: nonce)
            }
        }
        for (field, flip) in [("tag", 0), ("aad", 1), ("ciphertext", 2)] {
            var t = text, g = tag, a = aad
            switch flip {
            case 0: g[15] ^= 1
            case 1: a[0] ^= 0x80
            default: t[57] ^= 4
            }
            XCTAssertFalse(open(&t, g, a), "a flipped \(field) bit")
            XCTAssertEqual(t, [UInt8](repeating: 0, count: t.count), "nothing unauthenticated is left when the \(field) fails")
        }
        XCTAssertTrue(open(&text, tag, aad))
        XCTAssertEqual(text, plaintext)

        // Out of place, through the same handle: the same record; a failed open wipes `out`, not the input.
        var sealed = [UInt8](repeating: 0, count: plaintext.count)
        var outTag = [UInt8](repeating: 0, count: 16)
        aead.seal(&sealed, tag: &outTag, plaintext: plaintext, length: plaintext.count, aad: aad, aadLength: aad.count, nonce: nonce)
        XCTAssertEqual(Hex.encode(sealed) + Hex.encode(outTag), ciphertext + "1ae10b594f09e26a7e902ecbd0600691")
        var opened = [UInt8](repeating: 0xee, count: plaintext.count)
        var badTag = outTag
        badTag[0] ^= 1
        XCTAssertFalse(aead.open(&opened, ciphertext: sealed, length: sealed.count, tag: badTag, aad: aad, aadLength: aad.count, nonce: nonce))
        XCTAssertEqual(opened, [UInt8](repeating: 0, count: opened.count))
        XCTAssertTrue(aead.open(&opened, ciphertext: sealed, length: sealed.count, tag: outTag, aad: aad, aadLength: aad.count, nonce: nonce))
        XCTAssertEqual(opened, plaintext)
    }
}
