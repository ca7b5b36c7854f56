import SluiceCrypto
import SluiceIO
import SluiceMux
import SluiceWire

/// The carrier's data path without sockets, on one core: a client `MuxSession` encodes DATA frames
/// from its streams into records, sealed with `RecordSealer` into an outbound `ByteQueue` exactly as
/// `Carrier` does; the bytes are copied into the relay's `RecordOpener` (where a socket read would
/// put them), opened, and decoded by the relay's `MuxSession`, which delivers DATA to each stream's
/// handler. The handler reads and discards and returns the bytes with `consumed(_:)`, so CREDIT
/// frames travel back the same way (sealed, copied, opened, decoded) and wake the senders.
///
/// Each turn is a loop turn of both carriers: the client's streams send what their credit and the
/// carrier budget allow, the client flushes (seals), its output reaches the relay
/// (`carrierDrained()` wakes streams that ran out of budget), the relay decodes and flushes its
/// credit back, the client decodes it. GB/s is payload delivered to the relay's handlers.
/// Defaults as sluice runs them: `MuxSettings()` (512 KiB stream window, 1 MiB carrier budget,
/// 32 KiB DATA frames).
enum MuxBenchmark {
    struct Result { let streams: Int; let writeSize: Int; let gbps: Double; let records: Double; let turns: Double }

    static func run() {
        var results: [Result] = []
        for streams in [1, 16] {
            for writeSize in [1024, 16 * 1024, 64 * 1024] {
                results.append(measure(streams: streams, writeSize: writeSize))
            }
        }
        Bench.printTable(
            ["streams", "write bytes", "GB/s", "records/s", "turns/s"],
            results.map { [String($0.streams), String($0.writeSize), Bench.format($0.gbps), Bench.format($0.records, decimals: 0),
                           Bench.format($0.turns, decimals: 0)] })
        Bench.printJSON("mux", results.map {
            [("streams", String($0.streams)), ("write_bytes", String($0.writeSize)), ("gbps", Bench.format($0.gbps)),
             ("records_per_second", Bench.format($0.records, decimals: 0)), ("turns_per_second", Bench.format($0.turns, decimals: 0))]
        })
    }

    private static func measure(streams count: Int, writeSize: Int) -> Result {
        let pair = CarrierPair(writeSize: writeSize)
        let destination = Destination(host: .ip(IPAddress("192.0.2.1")!), port: 443)
        let senders = (0..<count).map { _ in Sender(writeSize: writeSize) }
        for sender in senders { sender.stream = pair.client.session.open(to: destination, handler: sender) }
        pair.turn()  // OPEN reaches the relay, OPEN_OK comes back; the senders start on streamDidOpen
        precondition(pair.relayStreams.count == count && senders.allSatisfy { $0.stream!.isOpen }, "streams did not open")

        var turns = 0, turnsAtStart = 0, recordsAtStart = 0, deliveredAtStart = 0
        let bytes = Bench.rate(timing: {
            (turnsAtStart, recordsAtStart, deliveredAtStart) = (turns, pair.client.recordsSealed, pair.delivered)
        }) {
            let before = pair.delivered
            for _ in 0..<16 { pair.turn() }
            turns += 16
            return pair.delivered - before
        }
        // Stop the senders and let what is in flight arrive: every byte sent must have been delivered.
        for sender in senders { sender.stopped = true }
        pair.turn()
        let sent = senders.reduce(0) { $0 + $1.sent }
        precondition(sent == pair.delivered, "sent \(sent), delivered \(pair.delivered)")
        let seconds = Double(pair.delivered - deliveredAtStart) / bytes
        return Result(streams: count, writeSize: writeSize, gbps: bytes / 1e9,
                      records: Double(pair.client.recordsSealed - recordsAtStart) / seconds,
                      turns: Double(turns - turnsAtStart) / seconds)
    }

    /// Two carriers wired back to back in memory: the client's sealed output is the relay's input and
    /// the other way round.
    final class CarrierPair {
        let client = MemoryCarrier(role: .client, sendKey: key(1), receiveKey: key(2))
        let relay = MemoryCarrier(role: .relay, sendKey: key(2), receiveKey: key(1))
        var relayStreams: [Receiver] = []
        /// Payload bytes the relay's handlers received.
        var delivered: Int { relayStreams.reduce(0) { $0 + $1.received } }

        init(writeSize: Int) {
            relay.onRequest = { [unowned self] stream in
                let receiver = Receiver(writeSize: writeSize)
                stream.handler = receiver
                relayStreams.append(receiver)
                stream.accept()
            }
        }

        /// One loop turn of each end, the relay's answer included.
        func turn() {
            client.flush()
            client.transfer(to: relay)
            relay.deliver()
            relay.flush()
            relay.transfer(to: client)
            client.deliver()
        }

        private static func key(_ seed: UInt8) -> SymmetricKey {
            try! SymmetricKey(bytes: (0..<32).map { UInt8($0) &* 7 &+ seed })
        }
    }

    /// `Carrier` without the socket: the same sealer, opener, outbound queue and session calls.
    final class MemoryCarrier: MuxSessionDelegate {
        private let sealer: RecordSealer
        private let opener: RecordOpener
        private let outbound = ByteQueue(capacity: 1 << 20)
        private(set) var session: MuxSession!
        private(set) var recordsSealed = 0
        var onRequest: ((MuxStream) -> Void)?

        init(role: MuxSession.Role, sendKey: SymmetricKey, receiveKey: SymmetricKey) {
            sealer = RecordSealer(key: sendKey)
            opener = RecordOpener(key: receiveKey)
            session = MuxSession(role: role, delegate: self)
        }

        func session(_ session: MuxSession, didRequest stream: MuxStream, to destination: Destination) { onRequest?(stream) }

        func session(_ session: MuxSession, sealRecord plaintext: UnsafeRawBufferPointer) {
            try! sealer.seal(plaintext, into: outbound)
            recordsSealed += 1
        }

        func queuedBytes(for session: MuxSession) -> Int { outbound.count }
        func sessionNeedsFlush(_ session: MuxSession) {}  // `flush()` runs every turn anyway

        func flush() { session.flush() }

        /// The socket write and the peer's read: the peer's opener gets a copy of everything queued.
        func transfer(to peer: MemoryCarrier) {
            guard !outbound.isEmpty else { return }
            peer.opener.feed(outbound.readableBytes)
            outbound.consume(outbound.count)
            session.carrierDrained()
        }

        /// `Carrier.deliverRecords`: open every whole record and hand it to the session.
        func deliver() {
            while let record = try! opener.nextRecord() { try! session.receive(record: record) }
        }
    }

    /// A client stream's source: offers `writeSize`-byte writes (the rest of one the stream took only
    /// in part, then whole ones), as `FlowBridge` offers lwIP's pbufs, whenever the stream can send.
    final class Sender: MuxStreamHandler {
        var stream: MuxStream?
        private let data: [UInt8]
        private var offset = 0
        private(set) var sent = 0
        var stopped = false

        init(writeSize: Int) { data = (0..<writeSize).map { UInt8(truncatingIfNeeded: $0 &* 7) } }

        func streamDidOpen(_ stream: MuxStream) { send(stream) }
        func streamCanSend(_ stream: MuxStream) { send(stream) }

        private func send(_ stream: MuxStream) {
            guard !stopped else { return }
            data.withUnsafeBytes { bytes in
                while true {
                    let n = stream.send(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                    sent += n
                    offset += n
                    if offset == bytes.count { offset = 0 } else { return }  // a short take: wait for streamCanSend
                }
            }
        }

        func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) { fatalError("stream reset: \(message)") }
    }

    /// A relay stream's sink: takes every byte, checks the last of each delivery against the pattern
    /// the sender repeats (so the bytes were really decrypted and delivered in order), returns the
    /// credit at once.
    final class Receiver: MuxStreamHandler {
        private let writeSize: Int
        private(set) var received = 0

        init(writeSize: Int) { self.writeSize = writeSize }

        func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer) {
            received += data.count
            precondition(data.last == UInt8(truncatingIfNeeded: ((received - 1) % writeSize) &* 7), "wrong byte delivered")
            stream.consumed(data.count)
        }

        func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) { fatalError("stream reset: \(message)") }
    }
}
