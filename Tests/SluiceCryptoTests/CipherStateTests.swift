import XCTest
@testable import SluiceCrypto

final class CipherStateTests: XCTestCase {
    let key = try! SymmetricKey(bytes: Array(0..<32))

    /// REKEY(k) known answers, computed independently with Python's `cryptography` package:
    /// ChaCha20Poly1305(k).encrypt(b"\0"*4 + b"\xff"*8, b"\0"*32, b"")[:32] and likewise AESGCM.
    func testRekeyMatchesIndependentComputation() throws {
        var chacha = CipherState(cipher: .chaChaPoly, key: key)
        chacha.rekey()
        XCTAssertEqual(Hex.encode(try XCTUnwrap(chacha.key).copiedBytes),
                       "50835543a205b22c9323f2022bc4f67d838f90e61d5ccf33c4513e01f85b5042")
        try XCTSkipUnless(NoiseCipher.aesGCM.isAvailable)
        var aes = CipherState(cipher: .aesGCM, key: key)
        aes.rekey()
        XCTAssertEqual(Hex.encode(try XCTUnwrap(aes.key).copiedBytes),
                       "0201675c87335949b909793da5bb4d92fcf6d44b92a6e0792b6ae48b1881259d")
    }

    func testRekeyKeepsTheNonceAndBreaksTheOldKey() throws {
        var sender = CipherState(cipher: .chaChaPoly, key: key)
        var receiver = CipherState(cipher: .chaChaPoly, key: key)
        _ = try receiver.decrypt(ad: [], ciphertext: try sender.encrypt(ad: [], plaintext: [1]))
        sender.rekey()
        XCTAssertEqual(sender.nonce, 1)
        let message = try sender.encrypt(ad: [], plaintext: [2])
        var stale = receiver
        XCTAssertThrowsError(try stale.decrypt(ad: [], ciphertext: message))
        receiver.rekey()
        XCTAssertEqual(try receiver.decrypt(ad: [], ciphertext: message), [2])
    }

    func testFailedDecryptionDoesNotAdvanceTheNonce() throws {
        var sender = CipherState(cipher: .chaChaPoly, key: key)
        var receiver = CipherState(cipher: .chaChaPoly, key: key)
        var message = try sender.encrypt(ad: [9], plaintext: [1, 2, 3])
        XCTAssertThrowsError(try receiver.decrypt(ad: [8], ciphertext: message))
        message[0] ^= 1
        XCTAssertThrowsError(try receiver.decrypt(ad: [9], ciphertext: message))
        message[0] ^= 1
        XCTAssertEqual(receiver.nonce, 0)
        XCTAssertEqual(try receiver.decrypt(ad: [9], ciphertext: message), [1, 2, 3])
        XCTAssertEqual(receiver.nonce, 1)
    }

    func testTheLastNonceIsReserved() throws {
        var state = CipherState(cipher: .chaChaPoly, key: key)
        state.setNonce(UInt64.max - 1)
        _ = try state.encrypt(ad: [], plaintext: [])
        XCTAssertThrowsError(try state.encrypt(ad: [], plaintext: [])) {
            XCTAssertEqual($0 as? CryptoError, .nonceExhausted)
        }
    }

    func testWithoutAKeyPlaintextPassesThrough() throws {
        var state = CipherState(cipher: .chaChaPoly)
        XCTAssertFalse(state.hasKey)
        XCTAssertEqual(try state.encrypt(ad: [1], plaintext: [5, 6]), [5, 6])
        XCTAssertEqual(state.nonce, 0)
    }
}
