import SluiceCarrier
import SluiceCrypto
import SluiceLog
import SluiceMux
import SluiceStack
import SluiceWire

/// Joins one application TCP flow (lwIP) to one mux stream. Loop-confined (the stack thread).
///
/// Opening: the application's SYN is held while the relay connects; OPEN_OK admits it into lwIP,
/// RESET answers it with RST (so connect() fails with ECONNREFUSED). Data moves under backpressure
/// both ways: application bytes leave lwIP only as the stream has credit, relay bytes are returned as
/// credit only once lwIP accepted them for the application.
final class FlowBridge: MuxStreamHandler, TCPFlowHandler {
    let key: FlowKey
    private unowned let client: TunnelClient
    private(set) var stream: MuxStream?
    private var flow: TCPFlow?
    /// Bytes from the relay that lwIP could not take yet (bounded by the stream window).
    private let toApplication = ByteQueue(capacity: 0)
    private var ended = false

    init(key: FlowKey, client: TunnelClient) {
        self.key = key
        self.client = client
    }

    func open(on carrier: Carrier, to destination: SocketEndpoint) {
        stream = carrier.session.open(to: Destination(destination), handler: self)
    }

    // MARK: opening

    func streamDidOpen(_ stream: MuxStream) { client.stack.admit(key) }

    func attach(_ flow: TCPFlow) {
        self.flow = flow
        flow.handler = self
        drainToApplication()
        pumpToRelay()
    }

    /// The application abandoned its SYN before the relay answered.
    func abandon() {
        stream?.reset(.closed)
        end()
    }

    // MARK: application -> relay

    func flowHasInput(_ flow: TCPFlow) { pumpToRelay() }
    func streamCanSend(_ stream: MuxStream) { pumpToRelay() }

    private func pumpToRelay() {
        guard let flow, let stream, !ended else { return }
        flow.read { bytes in stream.send(bytes) }
        if flow.inputEnded && !stream.sentFIN {
            stream.finish()
            closeIfDone()
        }
    }

    // MARK: relay -> application

    func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer) {
        var taken = 0
        if toApplication.isEmpty, let flow { taken = flow.write(data) }
        if taken < data.count { toApplication.append(UnsafeRawBufferPointer(rebasing: data[taken...])) }
        if taken > 0 { stream.consumed(taken) }
    }

    func flowCanWrite(_ flow: TCPFlow) { drainToApplication() }

    func streamDidReceiveFIN(_ stream: MuxStream) { drainToApplication() }

    private func drainToApplication() {
        guard let flow, !ended else { return }
        var total = 0
        while !toApplication.isEmpty {
            let taken = flow.write(toApplication.readableBytes)
            toApplication.consume(taken)
            total += taken
            if taken == 0 { break }
        }
        if total > 0 { stream?.consumed(total) }
        if toApplication.isEmpty, let stream, stream.receivedFIN {
            flow.shutdownOutput()
            closeIfDone()
        }
    }

    private func closeIfDone() {
        guard let flow, let stream else { return }
        if stream.sentFIN && stream.receivedFIN && toApplication.isEmpty && flow.inputEnded {
            flow.close()
            end()
        }
    }

    // MARK: resets

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {
        if let flow {
            flow.abort()
        } else {
            if reason == .forbidden {
                client.refusedDestinations.note(key.destination, udp: false, message: message)
            } else if reason != .closed {
                Log.debug("flow \(key) refused by relay: \(reason) \(message)", "client")
            }
            client.stack.refuse(key)
        }
        end()
    }

    func flowDidReset(_ flow: TCPFlow) {
        stream?.reset(.closed)
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
        client.bridgeEnded(self)
    }
}
