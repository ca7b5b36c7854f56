import SluiceCrypto
import SluiceMux
import SluiceWire

/// What the tunnel engine needs to know: the relay, the keys, and how flows are carried. Host
/// matters (a TUN's name, routes, firewall, resolver files) are not here; they belong to whoever
/// hosts the engine (`sluice up`: SluiceHost's `HostConfiguration`).
public struct TunnelConfiguration: Sendable {
    /// The relay's endpoint.
    public var relay: SocketEndpoint
    public var relayPublicKey: PublicKey
    public var privateKey: PrivateKey
    public var psk: PresharedKey?
    /// Carriers (TCP connections) kept to the relay; new flows go to the least loaded.
    public var carriers: Int = 2
    /// The MTU of the packet flow: datagrams toward the applications that are longer are
    /// fragmented, and TCP segments never exceed it (unless the flow cuts super-packets).
    public var mtu: Int = 1500
    /// Resolvers that get every DNS query (UDP and TCP to port 53, any address), usually on port 53;
    /// empty: DNS is ordinary traffic. Answers come back from the address the application asked.
    public var dnsResolvers: [SocketEndpoint] = []
    /// Split DNS: only UDP queries for names in these domains go to `dnsResolvers`; every other
    /// query goes where it was sent (around the tunnel through the host's `DirectDNSPath`, when the
    /// host routes its destination so). Empty: every query goes to `dnsResolvers`. See `DNSRedirect`.
    public var dnsDomains: [DNSName] = []
    /// Idle time after which a UDP mapping closes.
    public var udpTimeoutMilliseconds: UInt64 = 60_000
    /// UDP mappings (application source endpoints) kept at once; the one idle longest goes first.
    public var maxUDPMappings = 1024
    public var mux = MuxSettings()

    public init(relay: SocketEndpoint, relayPublicKey: PublicKey, privateKey: PrivateKey, psk: PresharedKey? = nil) {
        self.relay = relay
        self.relayPublicKey = relayPublicKey
        self.privateKey = privateKey
        self.psk = psk
    }
}
