/// The tunnel's state as its host sees it, in the manner of a packet-tunnel provider's status:
/// connecting until the first carrier is up, connected while any is, reconnecting while all are
/// lost and being redialled, disconnected after `stop()` or a fatal error. With a SOCKS5 upstream
/// the "carrier" is the server: connected once it answered a check (greeting and credentials),
/// reconnecting after a connection to it failed, until a check passes again.
public enum TunnelState: String, Sendable, Codable, Equatable {
    case connecting
    case connected
    case reconnecting
    case disconnected
}

/// What the engine tells its host (`TunnelEventDelegate`), on the engine's loop thread.
public enum TunnelEvent: Sendable, Equatable {
    /// `start()` was called; the first carrier is being dialled (or the SOCKS5 server checked).
    case connecting
    /// A carrier is up: flows can be carried. Sent on the first carrier and again after every
    /// recovery from `reconnecting`.
    case connected
    /// Every carrier was lost; they are being redialled. New flows are refused until one is up.
    case reconnecting(reason: String)
    /// A carrier came up: the `index`th (1-based) to `relay`, the relay's endpoint (with a SOCKS5
    /// upstream, `socks5://HOST:PORT` and 1, when the server answered a check).
    case carrierUp(relay: String, index: Int)
    /// With several relays: `relay` was found down (a carrier went silent, or it could not be
    /// reached while none of its carriers was up). Its carriers were closed, their flows reset; new
    /// flows go to another relay.
    case relayDown(relay: String, reason: String)
    /// With several relays: `relay` is up again (a carrier's handshake succeeded).
    case relayUp(relay: String)
    /// The engine stopped: by `stop()` (nil), or because of a fatal error.
    case disconnected(TunnelError?)
    /// Something went wrong that the engine survives (a dial failed, the relay refused a carrier);
    /// it keeps retrying.
    case error(TunnelError)
}

/// Receives the engine's events, on the engine's loop thread. Hop to your own queue from there.
public protocol TunnelEventDelegate: AnyObject {
    func tunnel(_ engine: TunnelEngine, didEmit event: TunnelEvent)
}

/// An error the engine reports, fatal (the engine stopped) or not (it keeps retrying).
public struct TunnelError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable, Codable {
        /// A carrier could not be dialled or authenticated (`DialFailure`).
        case dial
        /// An established carrier ended (`CarrierEnd`).
        case carrierLost
        /// The packet flow failed (`PacketFlowError`); fatal on the read path.
        case packetFlow
        /// The engine could not be set up (lwIP, the loop).
        case setup
    }

    public let kind: Kind
    public let message: String
    /// True when the engine stopped because of it.
    public let isFatal: Bool
    /// The relay (endpoint) of the carrier it is about, for `dial` and `carrierLost`.
    public let relay: String?

    public init(_ kind: Kind, _ message: String, isFatal: Bool, relay: String? = nil) {
        self.kind = kind
        self.message = message
        self.isFatal = isFatal
        self.relay = relay
    }

    public var description: String { message }
}
