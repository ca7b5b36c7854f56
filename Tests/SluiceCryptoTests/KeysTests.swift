import XCTest
@testable import SluiceCrypto

final class KeysTests: XCTestCase {
    // RFC 7748 §6.1.
    let alicePrivate = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
    let alicePublic = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    let bobPrivate = "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"
    let bobPublic = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
    let shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"

    func testPublicKeyAndSharedSecretMatchRFC7748() throws {
        let alice = try PrivateKey(bytes: Hex.decode(alicePrivate))
        let bob = try PrivateKey(bytes: Hex.decode(bobPrivate))
        XCTAssertEqual(Hex.encode(alice.publicKey.bytes), alicePublic)
        XCTAssertEqual(Hex.encode(bob.publicKey.bytes), bobPublic)
        XCTAssertEqual(Hex.encode(try alice.sharedSecret(with: bob.publicKey).copiedBytes), shared)
        XCTAssertEqual(Hex.encode(try bob.sharedSecret(with: alice.publicKey).copiedBytes), shared)
    }

    func testWrongLengthsAreRejected() {
        for count in [0, 31, 33, 64] {
            let bytes = [UInt8](repeating: 1, count: count)
            let expected = CryptoError.invalidKeyLength(expected: 32, actual: count)
            XCTAssertThrowsError(try PrivateKey(bytes: bytes)) { XCTAssertEqual($0 as? CryptoError, expected) }
            XCTAssertThrowsError(try PublicKey(bytes: bytes)) { XCTAssertEqual($0 as? CryptoError, expected) }
            XCTAssertThrowsError(try PresharedKey(bytes: bytes)) { XCTAssertEqual($0 as? CryptoError, expected) }
            XCTAssertThrowsError(try SymmetricKey(bytes: bytes)) { XCTAssertEqual($0 as? CryptoError, expected) }
        }
    }

    func testGeneratedKeysAreClampedAndDistinct() {
        let a = PrivateKey.generate()
        let b = PrivateKey.generate()
        XCTAssertNotEqual(a, b)
        XCTAssertNotEqual(a.publicKey, b.publicKey)
        for key in [a, b] {
            XCTAssertEqual(key.copiedBytes[0] & 7, 0)
            XCTAssertEqual(key.copiedBytes[31] & 0xC0, 0x40)
        }
    }

    func testLowOrderPeerKeyIsRefused() throws {
        let zeroPoint = try PublicKey(bytes: [UInt8](repeating: 0, count: 32))
        XCTAssertThrowsError(try PrivateKey.generate().sharedSecret(with: zeroPoint)) {
            XCTAssertEqual($0 as? CryptoError, .weakPublicKey)
        }
    }

    func testSecretsDoNotPrint() throws {
        let key = try PrivateKey(bytes: Hex.decode(alicePrivate))
        XCTAssertFalse("\(key)".contains("77076d"))
        XCTAssertFalse(String(reflecting: key).contains("77076d"))
        XCTAssertEqual("\(PresharedKey.zero)", "PresharedKey(redacted)")
    }

    func testErrorsRenderAsSentences() {
        let text = CryptoError.invalidKeyLength(expected: 32, actual: 31).description
        XCTAssertTrue(text.contains("32") && text.contains("31"), text)
    }
}
