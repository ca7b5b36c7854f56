import SluiceCrypto
import SluiceWire

/// What a `CarrierDialer` needs to reach and authenticate to a relay: shared by `sluice up` (through
/// `ClientSettings`) and `sluice bench`.
public struct CarrierTarget: Sendable {
    public var relay: SocketEndpoint
    public var relayPublicKey: PublicKey
    public var privateKey: PrivateKey
    public var psk: PresharedKey?
    /// `SO_MARK` for the carrier sockets, or nil for none: `up` marks them so they bypass the tunnel
    /// (which needs CAP_NET_ADMIN); `bench` needs no mark and no privileges.
    public var fwmark: UInt32?

    public init(relay: SocketEndpoint, relayPublicKey: PublicKey, privateKey: PrivateKey, psk: PresharedKey?, fwmark: UInt32?) {
        self.relay = relay
        self.relayPublicKey = relayPublicKey
        self.privateKey = privateKey
        self.psk = psk
        self.fwmark = fwmark
    }
}

extension ClientSettings {
    /// The relay and keys of these settings, carrier sockets marked with `fwmark`.
    var carrierTarget: CarrierTarget {
        CarrierTarget(relay: relay, relayPublicKey: relayPublicKey, privateKey: privateKey, psk: psk, fwmark: fwmark)
    }
}
