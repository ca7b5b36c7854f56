import SluiceMux
import SluiceWire

// The engine's flows leave through an `Upstream`: something that opens a TCP stream to a
// destination and a UDP association, with the flow control `FlowBridge` and `UDPMapping` rely on.
// Two implementations: `RelayUpstream` (streams and associations of encrypted carriers to one or
// several Sluice relays) and `SocksUpstream` (one SOCKS5 CONNECT or UDP ASSOCIATE per flow). The seam is per flow:
// what moves bytes (`send`, `didReceive`) is one call through it per chunk, not per byte.

/// Where the engine's TCP flows and UDP mappings go. Loop-confined: called and calling back on the
/// engine's loop thread only.
public protocol Upstream: AnyObject {
    var delegate: UpstreamDelegate? { get set }
    /// What `sluice status` shows as the upstream: the relay's endpoint, or `socks5://host:port`.
    var name: String { get }
    /// Starts connecting (carriers, or a first check of the SOCKS server).
    func start()
    /// Closes everything; every stream and association ends (their handlers hear nothing more).
    func stop()
    /// A TCP stream to `destination`. Its handler hears `upstreamStreamDidOpen` once the far end
    /// connected, or `didEnd` with the reason it could not. Throws at once when nothing is up to
    /// carry it.
    func openStream(to destination: Destination, handler: UpstreamStreamHandler) throws(UpstreamUnavailable) -> UpstreamStream
    /// A UDP association whose first datagram goes to `destination` (its address family picks the
    /// far end's socket). Datagrams may be sent at once.
    func openAssociation(to destination: Destination, handler: UpstreamAssociationHandler) throws(UpstreamUnavailable) -> UpstreamAssociation
    /// The host's path to the upstream changed (`reason` says how, such as "network changed"):
    /// closes every connection whose local address is not the one `sources` names for the address it
    /// goes to, so the flows it carried end at once instead of hanging until it times out, and
    /// connects again now, without backoff. Connections to an address `sources` leaves out stay.
    /// Returns how many connections it closed and how many are still up.
    func pathChanged(reason: String, sources: [IPAddress: IPAddress]) -> (closed: Int, up: Int)
    /// The connections to the upstream as `TunnelStatistics.carriers` shows them.
    func statistics() -> [CarrierStatistics]
    /// Each relay and its health as `TunnelStatistics.relays` shows them; empty for a SOCKS5 server.
    func relayStatistics() -> [TunnelStatistics.Relay]
    /// Drops this upstream counts itself, by reason (merged into `TunnelStatistics.drops`).
    var drops: [String: Int] { get }
    /// The relays' UDP paths together as `TunnelStatistics.udpPath` shows them; nil where there is
    /// none to have.
    var udpPath: UDPPathStatistics? { get }
}

extension Upstream {
    public var udpPath: UDPPathStatistics? { nil }
}

/// Why a stream or association could not be opened at all.
public enum UpstreamUnavailable: Error, Sendable, Equatable {
    /// No carrier is up, or the SOCKS server is unreachable: new flows are refused until it is back.
    case notConnected
    /// The SOCKS server answered UDP ASSOCIATE with "command not supported": UDP cannot go there.
    case udpUnsupported
}

/// One connection of an upstream: a carrier to a relay, or the SOCKS5 server.
public struct UpstreamPath: Sendable, Equatable, CustomStringConvertible {
    /// Where it goes: the relay's endpoint, or `socks5://HOST:PORT`.
    public var relay: String
    /// The carrier's 1-based slot at that relay (1 for a SOCKS5 server).
    public var index: Int
    /// How logs and events name it: "carrier #1 to 10.10.0.2:7000", "SOCKS5 server 10.10.0.2:1080".
    public var description: String

    public init(relay: String, index: Int, description: String) {
        self.relay = relay
        self.index = index
        self.description = description
    }
}

/// What an upstream tells its owner about its connections. Loop thread.
public protocol UpstreamDelegate: AnyObject {
    /// A connection came up (a carrier, or the SOCKS server answered); `upCount` are up now.
    func upstream(_ upstream: Upstream, pathUp path: UpstreamPath, upCount: Int)
    /// A connection was lost; `upCount` are still up. It is being redialled.
    func upstream(_ upstream: Upstream, pathLost path: UpstreamPath, reason: String, upCount: Int)
    /// A dial failed; it is retried after a backoff.
    func upstream(_ upstream: Upstream, dialFailed path: UpstreamPath, reason: String)
    /// With several relays: `relay` went down (new flows go elsewhere, its flows were reset) or is
    /// up again (`reason` nil).
    func upstream(_ upstream: Upstream, relay: String, downBecause reason: String?)
}

/// One TCP stream through an upstream, with credit-style flow control both ways: `send` takes only
/// what may go now, and the far end sends only as far as `consumed` returned.
public protocol UpstreamStream: AnyObject {
    var handler: UpstreamStreamHandler? { get set }
    /// Bytes `send` would take now (0 before the stream opened, after `finish`).
    var sendCapacity: Int { get }
    /// `sendCapacity`, or 0 while that is too small to be worth a read of the source (see
    /// `MuxStream.worthwhileSendCapacity`).
    var worthwhileSendCapacity: Int { get }
    /// Takes as many bytes as it can now and returns how many; when fewer than offered,
    /// `upstreamStreamCanSend` follows once more can go.
    func send(_ bytes: UnsafeRawBufferPointer) -> Int
    /// Asks for `upstreamStreamCanSend` once `sendCapacity` is above zero again.
    func notifyWhenSendable()
    /// Half-closes toward the far end (FIN) after what was sent.
    func finish()
    /// `count` received bytes left toward the application: the far end may send that many more.
    func consumed(_ count: Int)
    /// Aborts the stream; the far end is reset. No handler call follows.
    func reset()
}

/// What an `UpstreamStream` reports. Loop thread.
public protocol UpstreamStreamHandler: AnyObject {
    /// The far end connected: data may flow.
    func upstreamStreamDidOpen(_ stream: UpstreamStream)
    /// Bytes from the far end. The handler takes them all (buffering what it cannot pass on yet: the
    /// window bounds it) and calls `consumed` as they leave toward the application.
    func upstreamStream(_ stream: UpstreamStream, didReceive data: UnsafeRawBufferPointer)
    /// The far end will send nothing more (FIN), after everything already delivered.
    func upstreamStreamDidReceiveFIN(_ stream: UpstreamStream)
    /// `send` may take bytes again.
    func upstreamStreamCanSend(_ stream: UpstreamStream)
    /// The stream ended abnormally: refused before it opened (with why), reset by the far end, or
    /// its connection died. No call follows.
    func upstreamStream(_ stream: UpstreamStream, didEnd reason: ResetReason, message: String)
}

/// What became of a datagram handed to an association.
public enum DatagramSendResult: Sendable, Equatable {
    case sent
    /// The way up is full (the carrier's budget, a socket's send buffer, the queue of an association
    /// still being set up): dropped, never queued without bound.
    case full
}

/// One UDP association through an upstream: the datagrams of one application source endpoint, to
/// and from any number of remote endpoints.
public protocol UpstreamAssociation: AnyObject {
    var handler: UpstreamAssociationHandler? { get set }
    /// True once it ended (closed, or by the far end); a new one must be opened.
    var isClosed: Bool { get }
    func send(_ payload: UnsafeRawBufferPointer, to endpoint: SocketEndpoint) -> DatagramSendResult
    /// Ends the association. No handler call follows.
    func close()
}

/// What an `UpstreamAssociation` reports. Loop thread.
public protocol UpstreamAssociationHandler: AnyObject {
    /// One whole datagram from `source`; the bytes are valid only during the call.
    func association(_ association: UpstreamAssociation, didReceive payload: UnsafeRawBufferPointer, from source: SocketEndpoint)
    /// A datagram to `endpoint` failed (ICMP error seen by the far end).
    func association(_ association: UpstreamAssociation, datagramTo endpoint: SocketEndpoint, failed code: DatagramErrorCode, mtu: Int)
    /// The far end closed it (idle, its cap, its connection died). No call follows.
    func associationDidEnd(_ association: UpstreamAssociation)
}
