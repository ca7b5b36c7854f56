import SluiceMux
import SluiceWire

/// A mux stream as an `UpstreamStream`: forwards each call to the `MuxStream` and each of its
/// handler calls to the upstream handler. One small object per flow; per chunk of data it adds one
/// call, not a copy.
final class RelayStream: UpstreamStream, MuxStreamHandler {
    let stream: MuxStream
    var handler: UpstreamStreamHandler?

    init(_ stream: MuxStream) { self.stream = stream }

    var sendCapacity: Int { stream.sendCapacity }
    var worthwhileSendCapacity: Int { stream.worthwhileSendCapacity }
    func send(_ bytes: UnsafeRawBufferPointer) -> Int { stream.send(bytes) }
    func notifyWhenSendable() { stream.notifyWhenSendable() }
    func finish() { stream.finish() }
    func consumed(_ count: Int) { stream.consumed(count) }

    func reset() {
        handler = nil
        stream.reset(.closed)
    }

    // MARK: MuxStreamHandler

    func streamDidOpen(_ stream: MuxStream) { handler?.upstreamStreamDidOpen(self) }
    func stream(_ stream: MuxStream, didReceive data: UnsafeRawBufferPointer) { handler?.upstreamStream(self, didReceive: data) }
    func streamDidReceiveFIN(_ stream: MuxStream) { handler?.upstreamStreamDidReceiveFIN(self) }
    func streamCanSend(_ stream: MuxStream) { handler?.upstreamStreamCanSend(self) }

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {
        let h = handler
        handler = nil
        h?.upstreamStream(self, didEnd: reason, message: message)
    }
}

/// A mux UDP association (docs/protocol.md §6) as an `UpstreamAssociation`.
final class RelayAssociation: UpstreamAssociation, MuxStreamHandler {
    let stream: MuxStream
    var handler: UpstreamAssociationHandler?

    init(_ stream: MuxStream) { self.stream = stream }

    var isClosed: Bool { stream.isClosed }

    func send(_ payload: UnsafeRawBufferPointer, to endpoint: SocketEndpoint) -> DatagramSendResult {
        stream.sendDatagram(payload, endpoint: endpoint) ? .sent : .full
    }

    /// The application cannot tell a UDP socket is gone, so a mapping ends only for being idle or
    /// evicted at the cap (or with the engine): no one waits on its RESET.
    func close() {
        handler = nil
        stream.reset(.closed, message: "UDP mapping closed", urgent: false)
        stream.handler = nil
    }

    func stream(_ stream: MuxStream, didReceiveDatagram payload: UnsafeRawBufferPointer, endpoint: SocketEndpoint) {
        handler?.association(self, didReceive: payload, from: endpoint)
    }

    func stream(_ stream: MuxStream, datagramTo endpoint: SocketEndpoint, failed code: DatagramErrorCode, mtu: Int) {
        handler?.association(self, datagramTo: endpoint, failed: code, mtu: mtu)
    }

    func stream(_ stream: MuxStream, didReset reason: ResetReason, message: String) {
        let h = handler
        handler = nil
        h?.associationDidEnd(self)
    }
}
