import SluiceLog
import SluiceMux

/// The relay's end of a stream to a built-in bench endpoint (docs/protocol.md §7), used instead of
/// a `DestinationLink`: no socket, no DNS lookup, no connect; the stream is accepted at once.
/// Loop-confined.
///
/// - discard (port 9): every byte received is counted, dropped and returned as credit at once, so
///   the client's upload runs at the speed of the carrier, not of a destination.
/// - chargen (port 19): sends the RFC 864 pattern, sliced from one buffer made once
///   (`BenchService.pattern`), as far as `sendCapacity` allows — the stream's credit and the carrier's
///   budget, exactly as a destination's bytes would — and waits for `streamCanSend` otherwise. It
///   stops at the client's FIN or RESET. Bytes the client sends to it are discarded like discard's.
///
/// Either one answers the client's FIN with its own, which ends the stream.
final class BenchEndpoint: MuxStreamHandler {
    /// What the relay does with an OPEN.
    enum Route: Equatable {
        /// Not the bench host: an ordinary destination.
        case destination
        /// One of the built-in endpoints.
        case serve(BenchService)
        /// The bench host, but refused: answer with `RESET(reason, message)`.
        case refuse(ResetReason, String)
    }

    /// Decides what an OPEN to `destination` gets. With bench endpoints off (`--no-bench`) the name
    /// is refused as `unreachable` — what a relay without them would answer, since the name never
    /// resolves — without a lookup. An unknown port is `refused`, like a closed port of a real host.
    static func route(_ destination: Destination, enabled: Bool) -> Route {
        guard BenchService.isBenchHost(destination) else { return .destination }
        guard enabled else {
            return .refuse(.unreachable, "this relay does not offer bench endpoints (it runs with --no-bench)")
        }
        guard let service = BenchService(rawValue: destination.port) else {
            return .refuse(.refused, "\(BenchService.hostName) offers only port 9 (discard) and port 19 (chargen)")
        }
        return .serve(service)
    }

    let stream: MuxStream
    let service: BenchService
    /// Bytes received from the client (and discarded).
    private(set) var bytesIn = 0
    /// Bytes sent to the client (chargen).
    private(set) var bytesOut = 0
    /// Where chargen's next byte lies in the pattern, 0 ..< `BenchService.patternPeriod`.
    private var patternOffset = 0
    private var ended = false
    private let onEnd: (BenchEndpoint) -> Void

    /// Takes over `stream` (as its handler); `onEnd` runs once when the stream is over, however it ends.
    init(stream: MuxStream, service: BenchService, onEnd: @escaping (BenchEndpoint) -> Void) {
        self.stream = stream
        self.service = service
        self.onEnd = onEnd
        stream.handler = self
    }

    /// Accepts the stream (OPEN_OK) and, for chargen, starts sending.
    func start() {
        stream.accept()
        if service == .chargen { pump() }
    }

    // MARK: chargen

    func streamCanSend(_ stream: MuxStream) { pump() }

    private func pump() {
        guard service == .chargen, !ended else { return }
        while true {
            let room = min(stream.sendCapacity, BenchService.patternSlice)
            guard room > 0 else {
                stream.notifyWhenSendable()  // credit or a drained carrier brings us back
                return
            }
            let sent = BenchService.pattern.withUnsafeBytes {
                stream.send(UnsafeRawBufferPointer(rebasing: $0[patternOffset..<patternOffset + room]))
            }
            bytesOut += sent
            patternOffset = (patternOffset + sent) % BenchService.patternPeriod
            if sent < room { return }  // send() asked for streamCanSend
        }
    }

    // MARK: discard (both services)

    func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer) {
        bytesIn += data.count
        stream.consumed(data.count)
    }

    // MARK: lifecycle

    func streamDidReceiveFIN(_ stream: MuxStream) {
        stream.finish()
        end(how: "closed")
    }

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {
        end(how: "reset (\(reason))")
    }

    private func end(how: String) {
        guard !ended else { return }
        ended = true
        stream.handler = nil
        Log.debug("stream \(stream.id) to \(service.destination) (\(service)) \(how): \(bytesIn) bytes in, \(bytesOut) bytes out", "relay")
        onEnd(self)
    }
}
