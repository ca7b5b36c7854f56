import SluiceCrypto
import XCTest

@testable import SluiceCrypto

/// The UDP path's keys and AEAD (docs/protocol.md §8).
final class PathCipherTests: XCTestCase {
    private let key = try! SymmetricKey(bytes: (0..<32).map { UInt8($0) })

    /// HMAC-SHA256(00 01 … 1f, "sluice udp path"), computed apart with Python:
    /// `hmac.new(bytes(range(32)), b"sluice udp path", "sha256").hexdigest()`.
    func testKeyDerivationFixture() {
        let derived = PathKeys.derive(from: key)
        XCTAssertEqual(derived.copiedBytes.map { String(format: "%02x", $0) }.joined(), Self.derivedFixture)
        XCTAssertNotEqual(derived, key)
    }

    static let derivedFixture = "e988158ae339e293f9c5bfc9b4ca074b4de377284904af0f6e16d47a3bdb0a38"

    /// After a real handshake each end's sending path key is the other's receiving one, and neither
    /// is a record key.
    func testBothEndsDeriveTheSameKeys() throws {
        let relayKey = PrivateKey.generate(), clientKey = PrivateKey.generate()
        let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey)
        let response = try SluiceResponder(localStatic: relayKey).respond(to: initiator.message1, isAllowed: { _ in true },
                                                                           replayGuard: ReplayGuard())
        let client = try initiator.finish(message2: response.message2).keys
        let clientPath = PathKeys(client), relayPath = PathKeys(response.keys)
        XCTAssertEqual(clientPath.sending, relayPath.receiving)
        XCTAssertEqual(clientPath.receiving, relayPath.sending)
        XCTAssertNotEqual(clientPath.sending, clientPath.receiving)
        XCTAssertNotEqual(clientPath.sending, client.sending)
        XCTAssertNotEqual(clientPath.receiving, client.receiving)
    }

    /// The sealed bytes of one packet, computed apart with libsodium's
    /// `crypto_aead_chacha20poly1305_ietf_encrypt_detached` in C: key 00 01 … 1f, header 00 01 … 0f as
    /// the additional data, plaintext "hello", nonce 4 zero bytes then counter 9 (little-endian u64).
    /// Pins the wire format whatever library seals it.
    func testSealMatchesAFixtureAndOpensIt() {
        var packet = [UInt8](0..<16) + Array("hello".utf8) + [UInt8](repeating: 0, count: 16)
        _ = packet.withUnsafeMutableBytes { PathCipher(key: key).seal($0, headerLength: 16, plaintextLength: 5, counter: 9) }
        XCTAssertEqual(packet[16...].map { String(format: "%02x", $0) }.joined(), Self.sealedFixture)
        XCTAssertEqual(packet.withUnsafeMutableBytes { PathCipher(key: key).open($0, headerLength: 16, counter: 9) }, 5)
        XCTAssertEqual(Array(packet[16..<21]), Array("hello".utf8))
    }

    static let sealedFixture = "e7af606e7fa20b69a91ba05f384c8b0737ae07e5f1"

    /// A packet with no body (the header and the tag alone) seals and opens too.
    func testEmptyBody() {
        var packet = [UInt8](0..<16) + [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(packet.withUnsafeMutableBytes { PathCipher(key: key).seal($0, headerLength: 16, plaintextLength: 0, counter: 1) }, 32)
        XCTAssertEqual(packet.withUnsafeMutableBytes { PathCipher(key: key).open($0, headerLength: 16, counter: 1) }, 0)
        packet[31] ^= 1
        XCTAssertNil(packet.withUnsafeMutableBytes { PathCipher(key: key).open($0, headerLength: 16, counter: 1) })
    }

    func testSealOpenInPlace() {
        let sealer = PathCipher(key: key), opener = PathCipher(key: key)
        var packet = [UInt8](repeating: 0, count: 16 + 5 + 16)
        for i in 0..<16 { packet[i] = UInt8(i) }
        packet.replaceSubrange(16..<21, with: Array("hello".utf8))
        let total = packet.withUnsafeMutableBytes { sealer.seal($0, headerLength: 16, plaintextLength: 5, counter: 9) }
        XCTAssertEqual(total, 37)
        XCTAssertNotEqual(Array(packet[16..<21]), Array("hello".utf8), "encrypted in place")
        let sealed = packet

        XCTAssertEqual(packet.withUnsafeMutableBytes { opener.open($0, headerLength: 16, counter: 9) }, 5)
        XCTAssertEqual(Array(packet[16..<21]), Array("hello".utf8))

        // The header is authenticated, the counter is the nonce, every byte counts.
        for (what, change) in [("header byte", 3), ("ciphertext byte", 18), ("tag byte", 36)] {
            var tampered = sealed
            tampered[change] ^= 1
            XCTAssertNil(tampered.withUnsafeMutableBytes { opener.open($0, headerLength: 16, counter: 9) }, what)
        }
        var other = sealed
        XCTAssertNil(other.withUnsafeMutableBytes { opener.open($0, headerLength: 16, counter: 10) }, "another counter")
        XCTAssertEqual(Array(other[16..<21]), [0, 0, 0, 0, 0], "nothing that did not authenticate is left readable")
        var short = [UInt8](sealed[0..<20])
        XCTAssertNil(short.withUnsafeMutableBytes { opener.open($0, headerLength: 16, counter: 9) }, "shorter than a tag")
        var wrongKey = sealed
        XCTAssertNil(wrongKey.withUnsafeMutableBytes { PathCipher(key: PathKeys.derive(from: key)).open($0, headerLength: 16, counter: 9) })
    }
}
