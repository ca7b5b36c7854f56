import SluiceCarrier
import SluiceCrypto
import SluiceMux
import SluiceWire

/// What the tunnel engine needs to know: where flows go (Sluice relays and the keys, or a SOCKS5
/// server), and how they are carried. Host matters (a TUN's name, routes, firewall, resolver files)
/// are not here; they belong to whoever hosts the engine (`sluice up`: SluiceHost's
/// `HostConfiguration`).
public struct TunnelConfiguration: Sendable {
    /// Where the engine's flows leave.
    public enum Upstream: Sendable, Equatable {
        /// Streams of encrypted carriers to one or several Sluice relays, in order of preference
        /// (`RelayUpstream`); `relayPolicy` says how several are used. This client's key and the
        /// pre-shared key are the same for all.
        case relays([Relay], privateKey: PrivateKey, psk: PresharedKey?)
        /// One SOCKS5 CONNECT per TCP flow and one UDP ASSOCIATE per UDP mapping (`SocksUpstream`).
        case socks5(SocksServer)
    }

    /// A relay: where it listens and its public key.
    public struct Relay: Sendable, Equatable {
        public var endpoint: SocketEndpoint
        public var publicKey: PublicKey

        public init(endpoint: SocketEndpoint, publicKey: PublicKey) {
            self.endpoint = endpoint
            self.publicKey = publicKey
        }
    }

    public var upstream: Upstream
    /// With several relays: every carrier to the first healthy one (`failover`), or carriers to
    /// every healthy one and each new flow to the least loaded (`spread`).
    public var relayPolicy = RelayPolicy.failover
    /// Carriers (TCP connections) kept to each relay in use; new flows go to the least loaded. (A
    /// SOCKS5 upstream opens one connection per flow instead.)
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
    /// How long the engine's loop polls after traffic before it sleeps, in µs; 0 is off
    /// (`--busy-poll`; `EventLoop.busyPollNanoseconds` says what it buys and costs).
    public var busyPollMicroseconds = 0
    /// Windows and budgets of the carriers; `streamWindow` is also how far a SOCKS5 stream reads
    /// ahead of the application.
    public var mux = MuxSettings()
    /// When carriers ping the relay and give up on a silent one (`--ping-interval`, `--ping-misses`).
    public var keepalive = KeepaliveSettings.client

    /// Whether UDP flows may travel on the relay's encrypted UDP path where it offers one and it
    /// answers (docs/protocol.md §8; `--udp-path auto`); false sends every datagram on the carriers
    /// (`--udp-path off`). It is the UDP path feature bits of `mux.features` (the path, its bundles
    /// and its opens), which HELLO offers.
    public var udpPath: Bool {
        get { mux.features.contains(.udpPath) }
        set { if newValue { mux.features.formUnion(.udpPathFamily) } else { mux.features.subtract(.udpPathFamily) } }
    }

    /// Flows go to a Sluice relay.
    public init(relay: SocketEndpoint, relayPublicKey: PublicKey, privateKey: PrivateKey, psk: PresharedKey? = nil) {
        self.init(relays: [Relay(endpoint: relay, publicKey: relayPublicKey)], privateKey: privateKey, psk: psk)
    }

    /// Flows go to Sluice relays, used by `policy`. `relays` is not empty and names each relay once.
    public init(relays: [Relay], policy: RelayPolicy = .failover, privateKey: PrivateKey, psk: PresharedKey? = nil) {
        precondition(!relays.isEmpty, "no relay")
        upstream = .relays(relays, privateKey: privateKey, psk: psk)
        relayPolicy = policy
    }

    /// Flows go to a SOCKS5 server.
    public init(socks server: SocksServer) {
        upstream = .socks5(server)
    }

    /// The endpoints the upstream's own connections go to: the relays, or the SOCKS5 server. A host
    /// keeps them reachable outside the tunnel (`sluice up`: the route check and the kill switch).
    public var upstreamEndpoints: [SocketEndpoint] {
        switch upstream {
        case .relays(let relays, _, _): return relays.map(\.endpoint)
        case .socks5(let server): return [server.endpoint]
        }
    }
}
