import SluiceCrypto
import SluiceWire

/// What a `CarrierDialer` needs to reach and authenticate to a relay: shared by the engine,
/// `sluice bench` and `sluice socks`.
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
