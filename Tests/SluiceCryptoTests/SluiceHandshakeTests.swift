import Foundation
import Synchronization
import XCTest
@testable import SluiceCrypto

final class SluiceHandshakeTests: XCTestCase {
    let clientKey = PrivateKey.generate()
    let relayKey = PrivateKey.generate()
    let start = Tai64N(unixSeconds: 1_700_000_000, nanoseconds: 500)
    /// The PSK of a deployment without one (`PresharedKey.zero`), as HMAC key bytes.
    let zeroKey = [UInt8](repeating: 0, count: 32)

    func makeRelay(psk: PresharedKey? = nil) -> SluiceResponder { SluiceResponder(localStatic: relayKey, psk: psk) }
    func allowClient(_ key: PublicKey) -> Bool { key == clientKey.publicKey }

    func testRoundTripYieldsMatchingKeysAndFixedSizes() throws {
        let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, timestamp: start)
        XCTAssertEqual(initiator.message1.count, 125)
        let guardTable = ReplayGuard()
        let response = try makeRelay().respond(to: initiator.message1, isAllowed: allowClient, replayGuard: guardTable)
        XCTAssertEqual(response.message2.count, 64)
        XCTAssertEqual(response.client, clientKey.publicKey)
        XCTAssertEqual(response.timestamp, start)
        XCTAssertEqual(guardTable.newestTimestamp(for: clientKey.publicKey), start)

        let accepted = try initiator.finish(message2: response.message2)
        XCTAssertEqual(accepted.relayFeatures, 0, "a relay made without features advertises none")
        let clientKeys = accepted.keys
        XCTAssertEqual(clientKeys.sending, response.keys.receiving)
        XCTAssertEqual(clientKeys.receiving, response.keys.sending)
        XCTAssertNotEqual(clientKeys.sending, clientKeys.receiving)
        XCTAssertEqual(clientKeys.handshakeHash, response.keys.handshakeHash)
        XCTAssertEqual(clientKeys.handshakeHash.count, 32)
    }

    /// Reads the messages with the generic Noise layer, configured only from docs/protocol.md §1,
    /// to pin the wire format: pattern, prologue, zero PSK, and both payload layouts.
    func testWireFormatMatchesTheProtocolDocument() throws {
        let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, timestamp: start)
        var relay = try HandshakeState(pattern: .IKpsk2, cipher: .chaChaPoly, initiator: false,
                                       prologue: Array("sluice/1".utf8), localStatic: relayKey, remoteStatic: nil,
                                       psk: try PresharedKey(bytes: [UInt8](repeating: 0, count: 32)))
        XCTAssertEqual(relay.protocolName, "Noise_IKpsk2_25519_ChaChaPoly_SHA256")
        let payload1 = try relay.readMessage(initiator.message1)
        XCTAssertEqual(Array(payload1.prefix(13)), [1, 0x40, 0, 0, 0, 0x65, 0x53, 0xf1, 0x00, 0, 0, 0x01, 0xf4])
        // The PSK proof: HMAC-SHA256(psk, "sluice psk proof" || e || timestamp), first 16 bytes.
        XCTAssertEqual(payload1.count, 29)
        XCTAssertEqual(Array(payload1.suffix(16)),
                       Array(zeroKey.withUnsafeBytes { NoiseHash.hmac(key: $0, Array("sluice psk proof".utf8),
                                                                      Array(initiator.message1.prefix(32)), start.bytes) }.prefix(16)))
        // A relay that predates feature bits sends 15 zero bytes after the version: no features.
        let message2 = try relay.writeMessage(payload: [1] + [UInt8](repeating: 0, count: 15))
        XCTAssertEqual(message2.count, 64)
        XCTAssertEqual(try initiator.finish(message2: message2).relayFeatures, 0)

        let ephemeral = PrivateKey.generate()
        var client = try HandshakeState(pattern: .IKpsk2, cipher: .chaChaPoly, initiator: true,
                                        prologue: Array("sluice/1".utf8), localStatic: clientKey, localEphemeral: ephemeral,
                                        remoteStatic: relayKey.publicKey, psk: .zero)
        let proof = zeroKey.withUnsafeBytes { NoiseHash.hmac(key: $0, Array("sluice psk proof".utf8),
                                                             ephemeral.publicKey.bytes, start.bytes) }.prefix(16)
        let message1 = try client.writeMessage(payload: [1] + start.bytes + proof)
        let response = try makeRelay().respond(to: message1, isAllowed: allowClient, replayGuard: ReplayGuard())
        XCTAssertEqual(try client.readMessage(response.message2), [1] + [UInt8](repeating: 0, count: 15))
    }

    func testUnknownClientIsRejectedAndNotRecorded() throws {
        let stranger = PrivateKey.generate()
        let initiator = try SluiceInitiator(localStatic: stranger, relayStatic: relayKey.publicKey)
        let guardTable = ReplayGuard()
        XCTAssertThrowsError(try makeRelay().respond(to: initiator.message1, isAllowed: allowClient, replayGuard: guardTable)) {
            XCTAssertEqual($0 as? HandshakeError, .unknownClient(stranger.publicKey))
        }
        XCTAssertNil(guardTable.newestTimestamp(for: stranger.publicKey))
    }

    func testReplayedAndOlderMessagesAreRejectedNewerAccepted() throws {
        let relay = makeRelay()
        let guardTable = ReplayGuard()
        let first = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, timestamp: start)
        _ = try relay.respond(to: first.message1, isAllowed: allowClient, replayGuard: guardTable)
        XCTAssertThrowsError(try relay.respond(to: first.message1, isAllowed: allowClient, replayGuard: guardTable)) {
            XCTAssertEqual($0 as? HandshakeError, .replayed(client: clientKey.publicKey, timestamp: start))
        }
        let older = Tai64N(unixSeconds: 1_700_000_000, nanoseconds: 499)
        let stale = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, timestamp: older)
        XCTAssertThrowsError(try relay.respond(to: stale.message1, isAllowed: allowClient, replayGuard: guardTable)) {
            XCTAssertEqual($0 as? HandshakeError, .replayed(client: clientKey.publicKey, timestamp: older))
        }
        XCTAssertEqual(guardTable.newestTimestamp(for: clientKey.publicKey), start)
        let newer = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, timestamp: start.successor)
        XCTAssertNoThrow(try relay.respond(to: newer.message1, isAllowed: allowClient, replayGuard: guardTable))
        XCTAssertEqual(guardTable.newestTimestamp(for: clientKey.publicKey), start.successor)
    }

    func testConcurrentReplaysAdmitExactlyOne() throws {
        let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey)
        let relay = makeRelay()
        let guardTable = ReplayGuard()
        let allowed = clientKey.publicKey
        let successes = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            if (try? relay.respond(to: initiator.message1, isAllowed: { $0 == allowed }, replayGuard: guardTable)) != nil {
                successes.add(1, ordering: .relaxed)
            }
        }
        XCTAssertEqual(successes.load(ordering: .relaxed), 1)
    }

    /// The PSK proof in message 1 lets the relay refuse (silently) before it answers at all.
    func testWrongPresharedKeyIsRejectedAtTheRelay() throws {
        let relayPSK = try PresharedKey(bytes: [UInt8](repeating: 7, count: 32))
        for clientPSK in [nil, try PresharedKey(bytes: [UInt8](repeating: 8, count: 32))] {
            let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, psk: clientPSK)
            let guardTable = ReplayGuard()
            XCTAssertThrowsError(try makeRelay(psk: relayPSK).respond(to: initiator.message1, isAllowed: allowClient, replayGuard: guardTable)) {
                XCTAssertEqual($0 as? HandshakeError, .wrongPresharedKey(clientKey.publicKey))
            }
            XCTAssertNil(guardTable.newestTimestamp(for: clientKey.publicKey), "a refused handshake is not recorded")
        }
        // Same PSK on both ends works, and nil is the zero PSK.
        let matching = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, psk: relayPSK)
        let ok = try makeRelay(psk: relayPSK).respond(to: matching.message1, isAllowed: allowClient, replayGuard: ReplayGuard())
        XCTAssertNoThrow(try matching.finish(message2: ok.message2))
        let zero = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, psk: .zero)
        let ok2 = try makeRelay(psk: nil).respond(to: zero.message1, isAllowed: allowClient, replayGuard: ReplayGuard())
        XCTAssertNoThrow(try zero.finish(message2: ok2.message2))
    }

    func testWrongRelayKeyFailsAtTheRelay() throws {
        let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: PrivateKey.generate().publicKey)
        XCTAssertThrowsError(try makeRelay().respond(to: initiator.message1, isAllowed: allowClient, replayGuard: ReplayGuard())) {
            XCTAssertEqual($0 as? HandshakeError, .decryptFailed)
        }
    }

    func testEveryTamperedByteOfMessage1Fails() throws {
        let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey)
        let relay = makeRelay()
        for index in 0..<125 {
            for bit: UInt8 in [0x01, 0x80] {
                var forged = initiator.message1
                forged[index] ^= bit
                XCTAssertThrowsError(try relay.respond(to: forged, isAllowed: { _ in true }, replayGuard: ReplayGuard()),
                                     "byte \(index) bit \(bit)") {
                    XCTAssertEqual($0 as? HandshakeError, .decryptFailed, "byte \(index)")
                }
            }
        }
    }

    func testEveryTamperedByteOfMessage2Fails() throws {
        let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey)
        let response = try makeRelay().respond(to: initiator.message1, isAllowed: allowClient, replayGuard: ReplayGuard())
        for index in 0..<64 {
            var forged = response.message2
            forged[index] ^= 0x80
            XCTAssertThrowsError(try initiator.finish(message2: forged), "byte \(index)") {
                XCTAssertEqual($0 as? HandshakeError, .decryptFailed, "byte \(index)")
            }
        }
        XCTAssertNoThrow(try initiator.finish(message2: response.message2))
    }

    /// Message 2's payload (docs/protocol.md §1.1): version, features u32 big-endian, 11 zero bytes;
    /// the client reads the bits back, unknown ones included.
    func testMessage2CarriesTheRelaysFeatureBits() throws {
        let relay = SluiceResponder(localStatic: relayKey, features: 0x8000_0101)
        let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, timestamp: start)
        let response = try relay.respond(to: initiator.message1, isAllowed: allowClient, replayGuard: ReplayGuard())
        XCTAssertEqual(try initiator.finish(message2: response.message2).relayFeatures, 0x8000_0101)

        // The bytes, read by the generic Noise layer.
        let ephemeral = PrivateKey.generate()
        var client = try HandshakeState(pattern: .IKpsk2, cipher: .chaChaPoly, initiator: true,
                                        prologue: SluiceHandshake.prologue, localStatic: clientKey, localEphemeral: ephemeral,
                                        remoteStatic: relayKey.publicKey, psk: .zero)
        let proof = SluiceHandshake.pskProof(psk: .zero, ephemeral: ephemeral.publicKey.bytes, timestamp: start)
        let message1 = try client.writeMessage(payload: [1] + start.bytes + proof)
        let second = try relay.respond(to: message1, isAllowed: allowClient, replayGuard: ReplayGuard())
        XCTAssertEqual(try client.readMessage(second.message2), [1, 0x80, 0x00, 0x01, 0x01] + [UInt8](repeating: 0, count: 11))
    }

    func testWrongSizesAreRejectedBeforeAnyCrypto() throws {
        let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey)
        for size in [0, 109, 124, 126] {
            let message = Array(initiator.message1.prefix(size)) + [UInt8](repeating: 0, count: max(0, size - 125))
            XCTAssertThrowsError(try makeRelay().respond(to: message, isAllowed: allowClient, replayGuard: ReplayGuard())) {
                XCTAssertEqual($0 as? HandshakeError, .badLength(expected: 125, actual: size))
            }
        }
        XCTAssertThrowsError(try initiator.finish(message2: [UInt8](repeating: 0, count: 65))) {
            XCTAssertEqual($0 as? HandshakeError, .badLength(expected: 64, actual: 65))
        }
    }

    func testOtherVersionsAreRejected() throws {
        var client = try HandshakeState(pattern: .IKpsk2, cipher: .chaChaPoly, initiator: true,
                                        prologue: SluiceHandshake.prologue, localStatic: clientKey,
                                        remoteStatic: relayKey.publicKey, psk: .zero)
        let message1 = try client.writeMessage(payload: [2] + start.bytes + [UInt8](repeating: 0, count: 16))
        XCTAssertThrowsError(try makeRelay().respond(to: message1, isAllowed: allowClient, replayGuard: ReplayGuard())) {
            XCTAssertEqual($0 as? HandshakeError, .badVersion(2))
        }

        let initiator = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey)
        var relay = try HandshakeState(pattern: .IKpsk2, cipher: .chaChaPoly, initiator: false,
                                       prologue: SluiceHandshake.prologue, localStatic: relayKey,
                                       remoteStatic: nil, psk: .zero)
        _ = try relay.readMessage(initiator.message1)
        let message2 = try relay.writeMessage(payload: [2] + [UInt8](repeating: 0, count: 15))
        XCTAssertThrowsError(try initiator.finish(message2: message2)) {
            XCTAssertEqual($0 as? HandshakeError, .badVersion(2))
        }
    }

    func testInjectedEphemeralsMakeTheHandshakeDeterministic() throws {
        let e1 = PrivateKey.generate(), e2 = PrivateKey.generate()
        func run() throws -> ([UInt8], [UInt8]) {
            let i = try SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, psk: nil,
                                        timestamp: start, ephemeral: e1)
            let r = try makeRelay().respond(to: i.message1, isAllowed: allowClient, replayGuard: ReplayGuard(), ephemeral: e2)
            return (i.message1, r.message2)
        }
        let (a1, a2) = try run()
        let (b1, b2) = try run()
        XCTAssertEqual(a1, b1)
        XCTAssertEqual(a2, b2)
    }

    func testErrorsNameTheClientInBase64() throws {
        let key = try PublicKey(bytes: [UInt8](repeating: 0xff, count: 32))
        let text = HandshakeError.unknownClient(key).description
        XCTAssertTrue(text.contains("//////////////////////////////////////////8="), text)
        XCTAssertTrue(HandshakeError.replayed(client: key, timestamp: start).description.contains("@1700000000.000000500"))
    }
}
