import SluiceMux
import XCTest

/// One end's carrier in memory: sealed records wait until `SessionPair.pump()` hands them to the
/// other session; `extraQueued` makes the carrier look full. (A small sibling of SluiceMuxTests'
/// `MuxPair`, which a test target cannot share.)
final class MemoryCarrier: MuxSessionDelegate {
    var records: [[UInt8]] = []
    var extraQueued = 0
    var onRequest: ((MuxStream, Destination) -> Void)?

    func session(_ session: MuxSession, didRequest stream: MuxStream, to destination: Destination) {
        onRequest?(stream, destination)
    }

    func session(_ session: MuxSession, sealRecord plaintext: UnsafeRawBufferPointer) { records.append(Array(plaintext)) }
    func queuedBytes(for session: MuxSession) -> Int { records.reduce(extraQueued) { $0 + $1.count } }
    func sessionNeedsFlush(_ session: MuxSession) {}
}

/// A client session and a relay session joined by two memory carriers.
final class SessionPair {
    let clientCarrier = MemoryCarrier()
    let relayCarrier = MemoryCarrier()
    let client: MuxSession
    let relay: MuxSession

    /// `advertised`: the feature bits of message 2; `clientSees`: what the client read there (an old
    /// client ignores them).
    init(client clientSettings: MuxSettings = MuxSettings(), relay relaySettings: MuxSettings = MuxSettings(),
         advertised: CarrierFeatures = [], clientSees: CarrierFeatures? = nil) {
        client = MuxSession(role: .client, settings: clientSettings, relayFeatures: clientSees ?? advertised, delegate: clientCarrier)
        relay = MuxSession(role: .relay, settings: relaySettings, relayFeatures: advertised, delegate: relayCarrier)
    }

    /// Moves records both ways until none are left, telling each sender its carrier drained (unless
    /// `extraQueued` says it is still full). A window overrun throws here, as the receiving session would.
    func pump() throws {
        for _ in 0..<10_000 {
            client.flush()
            relay.flush()
            let fromClient = clientCarrier.records, fromRelay = relayCarrier.records
            clientCarrier.records.removeAll()
            relayCarrier.records.removeAll()
            if fromClient.isEmpty && fromRelay.isEmpty { return }
            for record in fromClient { try record.withUnsafeBytes { try relay.receive(record: $0) } }
            if !fromClient.isEmpty { client.carrierDrained() }
            for record in fromRelay { try record.withUnsafeBytes { try client.receive(record: $0) } }
            if !fromRelay.isEmpty { relay.carrierDrained() }
        }
        XCTFail("pump did not settle")
    }
}

/// The client end of a test stream: counts what arrives, returns credit only when told to, and
/// sends `toSend` bytes as credit allows.
final class ClientEnd: MuxStreamHandler {
    var opened = false
    var received: [UInt8] = []
    var receivedFIN = false
    var reset: (ResetReason, String)?
    var toSend = 0
    var sent = 0
    var autoConsume = false
    private let chunk = [UInt8](repeating: 0x5a, count: 40_000)

    func streamDidOpen(_ stream: MuxStream) {
        opened = true
        streamCanSend(stream)
    }

    func streamCanSend(_ stream: MuxStream) {
        while sent < toSend {
            let n = chunk.withUnsafeBytes { stream.send(UnsafeRawBufferPointer(rebasing: $0[0..<min($0.count, toSend - sent)])) }
            sent += n
            if n == 0 { return }
        }
    }

    func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer) {
        received.append(contentsOf: data)
        if autoConsume { stream.consumed(data.count) }
    }

    func streamDidReceiveFIN(_ stream: MuxStream) { receivedFIN = true }

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) { reset = (reason, message) }
}
