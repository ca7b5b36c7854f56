import Foundation
import XCTest
@testable import SluiceCrypto

/// Replays the published Noise vectors in Fixtures/noise-vectors.json (see Fixtures/README.md): both
/// sides run with the vectors' keys, and every handshake and transport ciphertext must match byte for
/// byte, as must the final handshake hash where the vector gives one.
final class NoiseVectorTests: XCTestCase {
    struct Vector: Decodable {
        struct Message: Decodable { let payload: String; let ciphertext: String }
        let protocol_name: String
        let init_prologue: String
        let init_ephemeral: String
        let init_static: String?
        let init_remote_static: String?
        let init_psks: [String]?
        let resp_prologue: String
        let resp_ephemeral: String
        let resp_static: String?
        let resp_remote_static: String?
        let resp_psks: [String]?
        let handshake_hash: String?
        let messages: [Message]
    }

    struct File: Decodable { let source: String; let vectors: [Vector] }

    static func loadVectors() throws -> [Vector] {
        let url = try XCTUnwrap(Bundle.module.url(forResource: "noise-vectors", withExtension: "json", subdirectory: "Fixtures"))
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
    }

    func testChaChaPolyVectors() throws {
        let count = try runVectors(cipher: .chaChaPoly)
        XCTAssertEqual(count, 9, "expected every ChaChaPoly SHA256 vector of IK, IKpsk2, NK, KK, XX")
    }

    func testAESGCMVectors() throws {
        try XCTSkipUnless(NoiseCipher.aesGCM.isAvailable, "libsodium has no AES-256-GCM on this CPU")
        let count = try runVectors(cipher: .aesGCM)
        XCTAssertEqual(count, 9, "expected every AESGCM SHA256 vector of IK, IKpsk2, NK, KK, XX")
    }

    func testFixturesContainTheSluicePatterns() throws {
        let names = Set(try Self.loadVectors().map(\.protocol_name))
        XCTAssertTrue(names.contains("Noise_IK_25519_ChaChaPoly_SHA256"))
        XCTAssertTrue(names.contains("Noise_IKpsk2_25519_ChaChaPoly_SHA256"))
    }

    /// Runs every vector of one cipher and returns how many ran.
    private func runVectors(cipher: NoiseCipher) throws -> Int {
        var ran = 0
        for vector in try Self.loadVectors() {
            let parts = vector.protocol_name.split(separator: "_").map(String.init)
            guard parts.count == 5, parts[4] == "SHA256", parts[3] == cipher.name else { continue }
            let pattern = try XCTUnwrap(HandshakePattern(rawValue: parts[1]), vector.protocol_name)
            try run(vector, pattern: pattern, cipher: cipher)
            ran += 1
        }
        return ran
    }

    private func run(_ v: Vector, pattern: HandshakePattern, cipher: NoiseCipher) throws {
        let name = v.protocol_name
        func key(_ hex: String?) throws -> PrivateKey? { try hex.map { try PrivateKey(bytes: Hex.decode($0)) } }
        func pub(_ hex: String?) throws -> PublicKey? { try hex.map { try PublicKey(bytes: Hex.decode($0)) } }
        func psk(_ list: [String]?) throws -> PresharedKey? { try list?.first.map { try PresharedKey(bytes: Hex.decode($0)) } }

        var initiator = try HandshakeState(
            pattern: pattern, cipher: cipher, initiator: true, prologue: Hex.decode(v.init_prologue),
            localStatic: key(v.init_static), localEphemeral: key(v.init_ephemeral),
            remoteStatic: pub(v.init_remote_static), psk: psk(v.init_psks))
        var responder = try HandshakeState(
            pattern: pattern, cipher: cipher, initiator: false, prologue: Hex.decode(v.resp_prologue),
            localStatic: key(v.resp_static), localEphemeral: key(v.resp_ephemeral),
            remoteStatic: pub(v.resp_remote_static), psk: psk(v.resp_psks))
        XCTAssertEqual(initiator.protocolName, name)

        var transport: (i2r: CipherState, r2i: CipherState, r2iAtInitiator: CipherState, i2rAtResponder: CipherState)?
        var handshakeMessages = 0
        var transportMessages = 0
        for (index, message) in v.messages.enumerated() {
            let payload = Hex.decode(message.payload)
            let fromInitiator = index % 2 == 0
            let sent: [UInt8]
            let received: [UInt8]
            if var t = transport {
                if fromInitiator {
                    sent = try t.i2r.encrypt(ad: [], plaintext: payload)
                    received = try t.i2rAtResponder.decrypt(ad: [], ciphertext: sent)
                } else {
                    sent = try t.r2i.encrypt(ad: [], plaintext: payload)
                    received = try t.r2iAtInitiator.decrypt(ad: [], ciphertext: sent)
                }
                transport = t
                transportMessages += 1
            } else {
                if fromInitiator {
                    sent = try initiator.writeMessage(payload: payload)
                    received = try responder.readMessage(sent)
                } else {
                    sent = try responder.writeMessage(payload: payload)
                    received = try initiator.readMessage(sent)
                }
                handshakeMessages += 1
                if initiator.isComplete {
                    XCTAssertTrue(responder.isComplete, name)
                    let atInitiator = try initiator.split()
                    let atResponder = try responder.split()
                    transport = (atInitiator.initiatorToResponder, atResponder.responderToInitiator,
                                 atInitiator.responderToInitiator, atResponder.initiatorToResponder)
                    XCTAssertEqual(initiator.handshakeHash, responder.handshakeHash, name)
                    if let expected = v.handshake_hash {
                        XCTAssertEqual(Hex.encode(initiator.handshakeHash), expected, "\(name) handshake hash")
                    }
                }
            }
            XCTAssertEqual(Hex.encode(sent), message.ciphertext, "\(name) message \(index)")
            XCTAssertEqual(received, payload, "\(name) message \(index) payload")
        }
        XCTAssertEqual(handshakeMessages, pattern.messages.count, name)
        XCTAssertGreaterThan(transportMessages, 0, "\(name) has no transport messages to check")
        if let expected = v.init_static {
            XCTAssertEqual(responder.remoteStaticKey?.bytes, try PrivateKey(bytes: Hex.decode(expected)).publicKey.bytes, name)
        }
    }
}
