import SluiceWire

/// One relay a client may use: where it listens and its public key (`--relay` with
/// `--relay-public-key`, or one `--relays ENDPOINT,KEY`, or one object of the JSON `relays` list).
public struct RelayEntry: Sendable, Equatable {
    public let endpoint: SocketEndpoint
    /// The relay's static public key, 32 bytes.
    public let publicKey: [UInt8]

    public init(endpoint: SocketEndpoint, publicKey: [UInt8]) {
        precondition(publicKey.count == 32, "keys are 32 bytes")
        self.endpoint = endpoint
        self.publicKey = publicKey
    }

    /// How several relays are used (`--relay-policy`): the canonical names.
    public static let policies = ["failover", "spread"]
    public static let defaultPolicy = "failover"
}
