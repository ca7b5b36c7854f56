import SluiceIO
import SluiceLog
import SluiceMux
import SluiceStack
import SluiceWire

/// Joins one application TCP flow (lwIP) to one stream of the engine's `Upstream`. Loop-confined.
///
/// Opening: the application's SYN is held while the upstream connects; its success admits it into
/// lwIP, a refusal answers it with RST (so connect() fails with ECONNREFUSED). Data moves under
/// backpressure both ways: application bytes leave lwIP only as the stream takes them (credit, or
/// room in a SOCKS socket's queue), upstream bytes are reported consumed only once lwIP accepted
/// them for the application.
final class FlowBridge: UpstreamStreamHandler, TCPFlowHandler {
    let key: FlowKey
    private unowned let engine: TunnelEngine
    private(set) var stream: UpstreamStream?
    private var flow: TCPFlow?
    /// Bytes from the upstream that lwIP could not take yet (bounded by the stream window).
    private let toApplication = ByteQueue(capacity: 0)
    private var sentFIN = false
    private var receivedFIN = false
    private var ended = false

    init(key: FlowKey, engine: TunnelEngine) {
        self.key = key
        self.engine = engine
    }

    func open(via upstream: Upstream, to destination: SocketEndpoint) throws(UpstreamUnavailable) {
        stream = try upstream.openStream(to: Destination(destination), handler: self)
    }

    // MARK: opening

    func upstreamStreamDidOpen(_ stream: UpstreamStream) { engine.stack.admit(key) }

    func attach(_ flow: TCPFlow) {
        self.flow = flow
        flow.handler = self
        drainToApplication()
        pumpToUpstream()
    }

    /// The application abandoned its SYN before the upstream answered.
    func abandon() {
        stream?.reset()
        end()
    }

    // MARK: application -> upstream

    func flowHasInput(_ flow: TCPFlow) { pumpToUpstream() }
    func upstreamStreamCanSend(_ stream: UpstreamStream) { pumpToUpstream() }

    private func pumpToUpstream() {
        guard let flow, let stream, !ended else { return }
        engine.counters.tcpBytesUp += flow.read { bytes in stream.send(bytes) }
        if flow.inputEnded && !sentFIN {
            sentFIN = true
            stream.finish()
            closeIfDone()
        }
    }

    // MARK: upstream -> application

    func upstreamStream(_ stream: UpstreamStream, didReceive data: UnsafeRawBufferPointer) {
        var taken = 0
        if toApplication.isEmpty, let flow { taken = flow.write(data) }
        if taken < data.count { toApplication.append(UnsafeRawBufferPointer(rebasing: data[taken...])) }
        if taken > 0 {
            stream.consumed(taken)
            engine.counters.tcpBytesDown += taken
        }
    }

    func flowCanWrite(_ flow: TCPFlow) { drainToApplication() }

    func upstreamStreamDidReceiveFIN(_ stream: UpstreamStream) {
        receivedFIN = true
        drainToApplication()
    }

    private func drainToApplication() {
        guard let flow, !ended else { return }
        var total = 0
        while !toApplication.isEmpty {
            let taken = flow.write(toApplication.readableBytes)
            toApplication.consume(taken)
            total += taken
            if taken == 0 { break }
        }
        if total > 0 {
            stream?.consumed(total)
            engine.counters.tcpBytesDown += total
        }
        if toApplication.isEmpty, receivedFIN {
            flow.shutdownOutput()
            closeIfDone()
        }
    }

    private func closeIfDone() {
        guard let flow else { return }
        if sentFIN && receivedFIN && toApplication.isEmpty && flow.inputEnded {
            flow.close()
            end()
        }
    }

    // MARK: resets

    func upstreamStream(_ stream: UpstreamStream, didEnd reason: ResetReason, message: String) {
        if let flow {
            flow.abort()
        } else {
            if reason == .forbidden {
                engine.refusedDestinations.note(key.destination, udp: false, message: message)
            } else if reason != .closed {
                Log.debug("flow \(key) refused by the upstream: \(reason) \(message)", "tunnel")
            }
            engine.counters.tcpRefusedByRelay[reason, default: 0] += 1
            engine.stack.refuse(key)
        }
        self.stream = nil
        end()
    }

    func flowDidReset(_ flow: TCPFlow) {
        stream?.reset()
        end()
    }

    private func end() {
        guard !ended else { return }
        ended = true
        toApplication.removeAll()
        flow?.handler = nil
        flow = nil
        stream?.handler = nil
        stream = nil
        engine.bridgeEnded(self)
    }
}
