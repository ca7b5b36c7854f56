import XCTest

import SluiceMux
import SluiceWire

/// A session's UDP path, in memory (`MuxDatagramPath`): takes what `accepting` says and records it.
final class MemoryPath: MuxDatagramPath {
    var accepting = true
    var sent: [(stream: UInt32, endpoint: SocketEndpoint, bytes: [UInt8])] = []
    func send(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer) -> Bool {
        guard accepting else { return false }
        sent.append((stream, endpoint, Array(payload)))
        return true
    }
}

/// One end's carrier, in memory: sealed records wait in `records` until `MuxPair.pump()` carries them
/// to the other session. `queuedBytes` is what is waiting plus `extraQueued`, so a test can make the
/// carrier look slow (or full) without holding records back.
final class MemoryCarrier: MuxSessionDelegate {
    /// Record plaintexts sealed and not yet delivered, oldest first.
    var records: [[UInt8]] = []
    /// Added to `queuedBytes`: bytes a slow socket has not taken yet.
    var extraQueued = 0
    /// Every record sealed so far, for tests that look at the bytes.
    var sealedCount = 0
    var flushRequests = 0
    /// Relay side: OPEN requests, in order.
    var requests: [(stream: MuxStream, destination: Destination)] = []
    /// Relay side: called for each OPEN (set a handler, accept or reset here).
    var onRequest: ((MuxStream, Destination) -> Void)?

    func session(_ session: MuxSession, didRequest stream: MuxStream, to destination: Destination) {
        requests.append((stream, destination))
        onRequest?(stream, destination)
    }

    func session(_ session: MuxSession, sealRecord plaintext: UnsafeRawBufferPointer) {
        XCTAssertGreaterThan(plaintext.count, 0, "an empty record was sealed")
        XCTAssertLessThanOrEqual(plaintext.count, Frame.maximumRecordPlaintext, "record too large")
        records.append(Array(plaintext))
        sealedCount += 1
    }

    func queuedBytes(for session: MuxSession) -> Int {
        records.reduce(extraQueued) { $0 + $1.count }
    }

    func sessionNeedsFlush(_ session: MuxSession) { flushRequests += 1 }
    /// Requests to flush frames that may wait (`sessionNeedsDeferredFlush`); `MuxPair.pump` flushes
    /// them with everything else.
    var deferredFlushRequests = 0
    func sessionNeedsDeferredFlush(_ session: MuxSession) { deferredFlushRequests += 1 }

    /// Relay side: the features each HELLO put in effect.
    var negotiated: [CarrierFeatures] = []
    /// Client side: UDP_PATH indexes offered; relay side: UDP_PATH_USE flags.
    var pathOffers: [UInt32] = []
    var pathUses: [Bool] = []

    func session(_ session: MuxSession, didNegotiate features: CarrierFeatures) { negotiated.append(features) }
    func session(_ session: MuxSession, didOfferUDPPath index: UInt32) { pathOffers.append(index) }
    func session(_ session: MuxSession, peerUsesUDPPath use: Bool) { pathUses.append(use) }

    /// Removes and returns the oldest `limit` records (all by default).
    func takeRecords(upTo limit: Int = .max) -> [[UInt8]] {
        let taken = Array(records.prefix(limit))
        records.removeFirst(taken.count)
        return taken
    }
}

/// A client and a relay session wired to each other through two `MemoryCarrier`s.
final class MuxPair {
    let clientCarrier = MemoryCarrier()
    let relayCarrier = MemoryCarrier()
    let client: MuxSession
    let relay: MuxSession
    /// Relay-side handlers, one per accepted stream, in OPEN order.
    var relayHandlers: [RecordingHandler] = []

    /// - Parameters:
    ///   - autoAccept: the relay accepts every OPEN at once with a fresh `RecordingHandler`.
    ///   - advertised: the feature bits the relay sent in handshake message 2 (none by default).
    ///   - clientSees: what the client read there; `advertised` unless a test plays an old client,
    ///     which ignores the bits.
    init(client clientSettings: MuxSettings = MuxSettings(), relay relaySettings: MuxSettings = MuxSettings(), autoAccept: Bool = true,
         advertised: CarrierFeatures = [], clientSees: CarrierFeatures? = nil) {
        client = MuxSession(role: .client, settings: clientSettings, relayFeatures: clientSees ?? advertised, delegate: clientCarrier)
        relay = MuxSession(role: .relay, settings: relaySettings, relayFeatures: advertised, delegate: relayCarrier)
        if autoAccept {
            relayCarrier.onRequest = { [unowned self] stream, _ in
                let handler = RecordingHandler()
                stream.handler = handler
                relayHandlers.append(handler)
                stream.accept()
            }
        }
    }

    /// Carries records both ways until neither end has any left, the way a carrier would: each end
    /// flushes, its records reach the peer, then it hears `carrierDrained()` because its socket took
    /// them. Throws what a receiving session throws.
    ///
    /// `recordsPerTurn` makes the carrier slow: each turn moves at most that many records per
    /// direction, the rest stay queued (and count against the session's budget).
    func pump(recordsPerTurn: Int = .max, file: StaticString = #filePath, line: UInt = #line) throws(MuxError) {
        for _ in 0..<100_000 {
            client.flush()
            relay.flush()
            let fromClient = clientCarrier.takeRecords(upTo: recordsPerTurn)
            let fromRelay = relayCarrier.takeRecords(upTo: recordsPerTurn)
            if fromClient.isEmpty && fromRelay.isEmpty { return }
            for record in fromClient { try deliver(record, to: relay) }
            if !fromClient.isEmpty { client.carrierDrained() }
            for record in fromRelay { try deliver(record, to: client) }
            if !fromRelay.isEmpty { relay.carrierDrained() }
        }
        XCTFail("pump did not settle", file: file, line: line)
    }

    /// Opens a client stream to `destination` and pumps until the relay accepted it.
    func openStream(
        to destination: Destination = Destination(host: .ip(IPAddress("192.0.2.1")!), port: 443)
    ) throws(MuxError) -> (client: MuxStream, clientHandler: RecordingHandler, relay: MuxStream, relayHandler: RecordingHandler) {
        let handler = RecordingHandler()
        let stream = client.open(to: destination, handler: handler)
        try pump()
        let relayStream = relayCarrier.requests.last!.stream
        return (stream, handler, relayStream, relayStream.handler as! RecordingHandler)
    }
}

/// Records every callback a stream makes. Optionally returns credit for what it receives at once
/// (`autoConsume`) and sends `outgoing` as fast as the stream takes it.
final class RecordingHandler: MuxStreamHandler {
    enum Event: Equatable {
        case open
        case data(Int)
        case fin
        case reset(ResetReason, String)
        case canSend
    }

    var events: [Event] = []
    var received: [UInt8] = []
    /// Call `consumed` for every delivery, as a reader that never stalls would.
    var autoConsume = false
    /// Keep no copy of received bytes, only their count (for large transfers).
    var countOnly = false
    var receivedCount = 0
    /// Bytes still to send; `streamCanSend` sends more of them.
    var outgoing: [UInt8] = []
    var outgoingOffset = 0
    /// Send `finish()` once `outgoing` is all sent.
    var finishWhenSent = false
    /// Called at each `streamCanSend`, before sending (to log the order of wake-ups).
    var onCanSend: (() -> Void)?
    /// Called at each reset (to try re-entrant calls).
    var onReset: ((MuxStream) -> Void)?

    private(set) var canSendCount = 0
    /// More wake-ups than this means a session is spinning: stop sending so that the test ends.
    static let wakeupLimit = 100_000
    var resets: [Event] { events.filter { if case .reset = $0 { return true } else { return false } } }

    func streamDidOpen(_ stream: MuxStream) {
        events.append(.open)
        sendOutgoing(on: stream)
    }

    func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer) {
        events.append(.data(data.count))
        receivedCount += data.count
        if !countOnly { received.append(contentsOf: data) }
        if autoConsume { stream.consumed(data.count) }
    }

    func streamDidReceiveFIN(_ stream: MuxStream) { events.append(.fin) }

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {
        events.append(.reset(reason, message))
        onReset?(stream)
    }

    func streamCanSend(_ stream: MuxStream) {
        canSendCount += 1
        guard canSendCount <= Self.wakeupLimit else {
            if canSendCount == Self.wakeupLimit + 1 { XCTFail("stream \(stream.id) woken \(Self.wakeupLimit) times") }
            return
        }
        events.append(.canSend)
        onCanSend?()
        sendOutgoing(on: stream)
    }

    /// Sends as much of `outgoing` as the stream takes now.
    func sendOutgoing(on stream: MuxStream) {
        guard outgoingOffset < outgoing.count else { return }
        let n = outgoing.withUnsafeBytes { stream.send(UnsafeRawBufferPointer(rebasing: $0[outgoingOffset...])) }
        outgoingOffset += n
        if outgoingOffset == outgoing.count && finishWhenSent { stream.finish() }
    }

    var allSent: Bool { outgoingOffset == outgoing.count }
}

/// `count` bytes of a pattern that differs at every offset of a record, so reordering, loss or
/// duplication shows up; `seed` tells streams apart.
func pattern(_ count: Int, seed: UInt8) -> [UInt8] {
    (0..<count).map { i in UInt8(truncatingIfNeeded: i &* 7 &+ i >> 11 &+ Int(seed)) }
}

/// The frames of one record plaintext, DATA payloads copied out.
enum TestFrame: Equatable {
    case data(stream: UInt32, bytes: [UInt8])
    case datagram(stream: UInt32, more: Bool, endpoint: SocketEndpoint?, bytes: [UInt8])
    case control(Frame)
}

func decodeFrames(_ record: [UInt8]) throws -> [TestFrame] {
    try record.withUnsafeBytes { buffer in
        var decoder = FrameDecoder(buffer)
        var frames: [TestFrame] = []
        while let frame = try decoder.next() {
            switch frame {
            case .data(let stream, let payload): frames.append(.data(stream: stream, bytes: Array(payload)))
            case .datagram(let stream, let more, let endpoint, let payload):
                frames.append(.datagram(stream: stream, more: more, endpoint: endpoint, bytes: Array(payload)))
            case .control(let control): frames.append(.control(control))
            }
        }
        return frames
    }
}

/// A record plaintext made of `frames`, built with the real encoder (so a test can send the peer
/// things a well-behaved session never would).
func encodeRecord(_ frames: [TestFrame]) throws -> [UInt8] {
    var storage = [UInt8](repeating: 0, count: Frame.maximumRecordPlaintext)
    let count = try storage.withUnsafeMutableBytes { buffer in
        var encoder = FrameEncoder(buffer)
        for frame in frames {
            switch frame {
            case .data(let stream, let bytes):
                let ok = bytes.withUnsafeBytes { encoder.appendData(stream: stream, payload: $0) }
                precondition(ok, "test record too large")
            case .datagram(let stream, _, let endpoint, let bytes):
                let taken = bytes.withUnsafeBytes { encoder.appendDatagram(stream: stream, endpoint: endpoint, payload: $0) }
                precondition(taken == bytes.count, "test record too large")
            case .control(let control):
                let ok = try encoder.append(control)
                precondition(ok, "test record too large")
            }
        }
        return encoder.count
    }
    return Array(storage[0..<count])
}

/// Feeds a record to `session`, passing on what it throws.
func deliver(_ record: [UInt8], to session: MuxSession) throws(MuxError) {
    if let error = receiveError(session, record) { throw error }
}

/// Feeds a record to `session` and returns the error it throws, or nil.
func receiveError(_ session: MuxSession, _ record: [UInt8]) -> MuxError? {
    record.withUnsafeBytes { r -> MuxError? in
        do throws(MuxError) {
            try session.receive(record: r)
            return nil
        } catch {
            return error
        }
    }
}
