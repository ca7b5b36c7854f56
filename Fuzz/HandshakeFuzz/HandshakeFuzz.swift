// libFuzzer entry point for the relay's handshake responder and the client's reading of message 2
// (docs/protocol.md §1), against a SluiceCrypto built with -enable-testing (see Fuzz/README.md).
//
// Fixed keys, ephemerals and timestamp make one real message 1 and one real message 2. The first
// input byte picks a mode, the rest is:
// - 0: message 1 itself, any length;
// - 1: bit flips on the real message 1: pairs (offset, xor mask);
// - 2: a cut and a fuzzed tail: the first byte is how many bytes of the real message 1 to keep, the
//      rest follows them;
// - 3: bit flips on the real message 2, read by the initiator.
// Beyond "never traps": the responder accepts a message 1 exactly when it is the real one (any
// other change, wherever it is, must fail authentication or a check), and then refuses it a second
// time as a replay; the initiator accepts only the real message 2, and then both ends hold the same
// keys and the client sees the features the relay advertised. Every error renders to text.
@testable import SluiceCrypto

private let relayKey = try! PrivateKey(bytes: (0..<32).map { UInt8($0) })
private let clientKey = try! PrivateKey(bytes: (0..<32).map { UInt8(0x40 + $0) })
private let clientEphemeral = try! PrivateKey(bytes: (0..<32).map { UInt8(0x80 + $0) })
private let relayEphemeral = try! PrivateKey(bytes: (0..<32).map { UInt8(0xc0 + $0) })
private let psk = try! PresharedKey(bytes: [UInt8](repeating: 0x5a, count: 32))
/// Feature bits the relay advertises in message 2 (docs/protocol.md §1.1): two set, so a flip there shows.
private let relayFeatures: UInt32 = 0x8000_0001
private let responder = SluiceResponder(localStatic: relayKey, psk: psk, features: relayFeatures)
private let timestamp = Tai64N(unixSeconds: 1_700_000_000, nanoseconds: 1)
private let initiator = try! SluiceInitiator(localStatic: clientKey, relayStatic: relayKey.publicKey, psk: psk,
                                             timestamp: timestamp, ephemeral: clientEphemeral)
private let realMessage1 = initiator.message1
private let realResponse = try! respond(realMessage1, guard: ReplayGuard())
private let realMessage2 = realResponse.message2

private func respond(_ message1: [UInt8], guard replayGuard: ReplayGuard) throws(HandshakeError) -> SluiceResponse {
    try responder.respond(to: message1, isAllowed: { $0 == clientKey.publicKey }, replayGuard: replayGuard,
                          ephemeral: relayEphemeral)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func handshakeFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: data, count: size))
    guard let mode = bytes.first else { return 0 }
    let rest = Array(bytes.dropFirst())
    switch mode % 4 {
    case 0: checkMessage1(rest)
    case 1: checkMessage1(flipped(realMessage1, by: rest))
    case 2:
        let keep = min(Int(rest.first ?? 0), realMessage1.count)
        checkMessage1(Array(realMessage1.prefix(keep)) + rest.dropFirst())
    default: checkMessage2(flipped(realMessage2, by: rest))
    }
    return 0
}

/// `message` with each pair of `pairs` (offset modulo the length, mask) XORed in.
private func flipped(_ message: [UInt8], by pairs: [UInt8]) -> [UInt8] {
    var out = message
    var i = 0
    while i + 1 < pairs.count {
        out[Int(pairs[i]) % out.count] ^= pairs[i + 1]
        i += 2
    }
    return out
}

private func checkMessage1(_ message: [UInt8]) {
    let replayGuard = ReplayGuard()
    do {
        let response = try respond(message, guard: replayGuard)
        require(message == realMessage1, "the responder accepted an altered message 1")
        require(response.client == clientKey.publicKey && response.timestamp == timestamp)
        require(response.message2 == realMessage2, "message 2 differs for the same message 1")
        do {
            _ = try respond(message, guard: replayGuard)
            fatalError("a replayed message 1 was accepted")
        } catch {
            guard case .replayed = error else { fatalError("a replay failed as \(error), not as a replay") }
        }
    } catch {
        require(message != realMessage1, "the real message 1 was refused: \(error)")
        require(!error.description.isEmpty)
    }
}

private func checkMessage2(_ message: [UInt8]) {
    do {
        let acceptance = try initiator.finish(message2: message)
        require(message == realMessage2, "the initiator accepted an altered message 2")
        require(acceptance.relayFeatures == relayFeatures, "the client sees other features than the relay sent")
        let keys = acceptance.keys
        require(keys.sending == realResponse.keys.receiving && keys.receiving == realResponse.keys.sending,
                     "the two ends hold different keys")
        require(keys.handshakeHash == realResponse.keys.handshakeHash)
    } catch {
        require(message != realMessage2, "the real message 2 was refused: \(error)")
        require(!error.description.isEmpty)
    }
}

/// `precondition` that also prints its message in an optimised build, so that a crash says what broke.
private func require(_ condition: Bool, _ message: @autoclosure () -> String = "") {
    if !condition { fatalError(message()) }
}
