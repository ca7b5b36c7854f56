import SluiceCrypto
import SluiceWire

/// What a `CarrierDialer` needs to reach and authenticate to a relay: shared by the engine and
/// `sluice bench`.
public struct CarrierTarget: Sendable {
    public var relay: SocketEndpoint
    public var relayPublicKey: PublicKey
    public var privateKey: PrivateKey
    public var psk: PresharedKey?
    public var transport: any CarrierTransport

    public init(relay: SocketEndpoint, relayPublicKey: PublicKey, privateKey: PrivateKey, psk: PresharedKey?,
                transport: any CarrierTransport = DirectCarrierTransport()) {
        self.relay = relay
        self.relayPublicKey = relayPublicKey
        self.privateKey = privateKey
        self.psk = psk
        self.transport = transport
    }
}

extension TunnelConfiguration {
    /// The relay and keys of this configuration, reached through `transport`.
    func carrierTarget(_ transport: any CarrierTransport) -> CarrierTarget {
        CarrierTarget(relay: relay, relayPublicKey: relayPublicKey, privateKey: privateKey, psk: psk, transport: transport)
    }
}
