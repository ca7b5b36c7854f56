import SluiceCarrier
import SluiceCrypto
import SluiceMux
import SluiceWire

/// Settings of `sluice up`, resolved from the command line or a config file.
public struct ClientSettings: Sendable {
    public var relay: SocketEndpoint
    public var relayPublicKey: PublicKey
    public var privateKey: PrivateKey
    public var psk: PresharedKey?
    public var tunName: String
    public var addresses: [IPPrefix]
    public var routes: [IPPrefix]
    public var mtu: Int
    public var carriers: Int
    public var fwmark: UInt32
    public var table: UInt32
    /// Resolvers that get every DNS query (`--dns`); empty: DNS is ordinary traffic.
    public var dns: [IPAddress] = []
    /// Send all traffic through the tunnel and point the host's resolver at `dns` (`--route-all`).
    public var routeAll = false
    /// Prefixes kept off the tunnel (`--exclude`).
    public var excludes: [IPPrefix] = []
    /// With `routeAll`, locally attached networks enter the tunnel too (`--route-local`).
    public var routeLocal = false
    /// Nothing leaves except through the TUN, to the relay, or on loopback (`--kill-switch`).
    public var killSwitch = false
    /// Tunnel IPv6 off; IPv6 blocked while up (`--no-ipv6`).
    public var blockIPv6 = false
    /// Existing cgroups (relative to the cgroup2 root) whose traffic is routed like that of
    /// `sluice exec` (`--app-cgroup`).
    public var appCGroups: [String] = []
    public var udpTimeoutMilliseconds: UInt64 = 60_000
    public var maxUDPMappings = 1024
    /// Open the TUN with IFF_VNET_HDR and TSO/checksum offloads (super-packets both ways).
    public var tunOffload = true
    public var mux = MuxSettings()
    /// When the carriers ping the relay and give up on it (`--ping-interval`, `--ping-misses`).
    public var keepalive = KeepaliveSettings.client

    public init(relay: SocketEndpoint, relayPublicKey: PublicKey, privateKey: PrivateKey, psk: PresharedKey?, tunName: String,
                addresses: [IPPrefix], routes: [IPPrefix], mtu: Int, carriers: Int, fwmark: UInt32, table: UInt32) {
        self.relay = relay
        self.relayPublicKey = relayPublicKey
        self.privateKey = privateKey
        self.psk = psk
        self.tunName = tunName
        self.addresses = addresses
        self.routes = routes
        self.mtu = mtu
        self.carriers = carriers
        self.fwmark = fwmark
        self.table = table
    }
}
