import XCTest
@testable import SluiceCrypto

/// Behaviour of the generic Noise layer beyond the vectors: turn order, missing keys, atomic failure.
final class HandshakeStateTests: XCTestCase {
    let initiatorKey = PrivateKey.generate()
    let responderKey = PrivateKey.generate()

    func makePair(psk: PresharedKey? = .zero) throws -> (HandshakeState, HandshakeState) {
        let i = try HandshakeState(pattern: .IKpsk2, cipher: .chaChaPoly, initiator: true, prologue: [7],
                                   localStatic: initiatorKey, remoteStatic: responderKey.publicKey, psk: psk)
        let r = try HandshakeState(pattern: .IKpsk2, cipher: .chaChaPoly, initiator: false, prologue: [7],
                                   localStatic: responderKey, remoteStatic: nil, psk: psk)
        return (i, r)
    }

    func testMissingKeysAreNamed() {
        XCTAssertThrowsError(try HandshakeState(pattern: .IK, cipher: .chaChaPoly, initiator: true, prologue: [],
                                                localStatic: initiatorKey, remoteStatic: nil)) {
            XCTAssertEqual($0 as? CryptoError, .missingKey("remote static key"))
        }
        XCTAssertThrowsError(try HandshakeState(pattern: .IK, cipher: .chaChaPoly, initiator: false, prologue: [],
                                                localStatic: nil, remoteStatic: nil)) {
            XCTAssertEqual($0 as? CryptoError, .missingKey("local static key"))
        }
        XCTAssertThrowsError(try HandshakeState(pattern: .IKpsk2, cipher: .chaChaPoly, initiator: false, prologue: [],
                                                localStatic: responderKey, remoteStatic: nil, psk: nil)) {
            XCTAssertEqual($0 as? CryptoError, .missingKey("pre-shared key"))
        }
    }

    func testTurnOrderIsEnforced() throws {
        var (i, r) = try makePair()
        XCTAssertThrowsError(try r.writeMessage(payload: [])) { XCTAssertEqual($0 as? CryptoError, .outOfTurn) }
        XCTAssertThrowsError(try i.readMessage([UInt8](repeating: 0, count: 48))) {
            XCTAssertEqual($0 as? CryptoError, .outOfTurn)
        }
        XCTAssertThrowsError(try i.split()) { XCTAssertEqual($0 as? CryptoError, .handshakeIncomplete) }
        _ = try r.readMessage(try i.writeMessage(payload: []))
        _ = try i.readMessage(try r.writeMessage(payload: []))
        XCTAssertTrue(i.isComplete && r.isComplete)
        XCTAssertEqual(r.remoteStaticKey, initiatorKey.publicKey)
        XCTAssertThrowsError(try i.writeMessage(payload: [])) { XCTAssertEqual($0 as? CryptoError, .outOfTurn) }
    }

    func testAFailedReadLeavesTheStateUntouched() throws {
        var (i, r) = try makePair()
        let message = try i.writeMessage(payload: [1, 2, 3])
        var forged = message
        forged[forged.count - 1] ^= 0x80
        XCTAssertThrowsError(try r.readMessage(forged)) { XCTAssertEqual($0 as? CryptoError, .decryptionFailed) }
        XCTAssertThrowsError(try r.readMessage(Array(message.prefix(40)))) {
            XCTAssertEqual($0 as? CryptoError, .messageTooShort(needed: 80, actual: 40))
        }
        XCTAssertEqual(try r.readMessage(message), [1, 2, 3])
    }

    func testDifferentProloguesDoNotAgree() throws {
        var i = try HandshakeState(pattern: .IK, cipher: .chaChaPoly, initiator: true, prologue: Array("a".utf8),
                                   localStatic: initiatorKey, remoteStatic: responderKey.publicKey)
        var r = try HandshakeState(pattern: .IK, cipher: .chaChaPoly, initiator: false, prologue: Array("b".utf8),
                                   localStatic: responderKey, remoteStatic: nil)
        XCTAssertThrowsError(try r.readMessage(try i.writeMessage(payload: [])))
    }

    func testOversizedPayloadIsRefused() throws {
        var (i, _) = try makePair()
        XCTAssertThrowsError(try i.writeMessage(payload: [UInt8](repeating: 0, count: 65535))) {
            guard case .messageTooLong = $0 as? CryptoError else { return XCTFail("\($0)") }
        }
    }
}
