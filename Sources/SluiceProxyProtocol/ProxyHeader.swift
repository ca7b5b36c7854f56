import SluiceWire

// The PROXY protocol (HAProxy's proxy-protocol.txt, versions 1 and 2): a load balancer that
// forwards a TCP connection writes one header first, naming the client's original address and the
// address it connected to. A relay behind such a balancer (`sluice relay --proxy-protocol`) reads it
// before the handshake so that its logs, `sluice status` and per-client accounting see the client,
// not the balancer. No Debian library parses it (HAProxy's own parser is internal to HAProxy), so it
// is written here, without I/O: bytes in, a header or "need more" or an error out.

/// What a PROXY protocol header says. Decode with `decode(_:)`; `encoded()` writes it back (for
/// tests and the fuzz target: a balancer is what sends it in practice).
public struct ProxyHeader: Sendable, Equatable {
    public enum Version: Sendable, Equatable {
        /// The text line, `PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\n`.
        case v1
        /// The binary header with its 12-byte signature.
        case v2
    }

    /// Version 2's command; version 1 has only `proxy`.
    public enum Command: Sendable, Equatable {
        /// The balancer made the connection itself (a health check): the connection's own endpoints stand.
        case local
        /// The connection is relayed on behalf of a client.
        case proxy
    }

    /// The relayed connection's endpoints as the balancer saw them.
    public struct Addresses: Sendable, Equatable {
        /// The client.
        public var source: SocketEndpoint
        /// The address the client connected to (the balancer's).
        public var destination: SocketEndpoint

        public init(source: SocketEndpoint, destination: SocketEndpoint) {
            precondition(source.address.isIPv4 == destination.address.isIPv4, "one address family for both ends")
            self.source = source
            self.destination = destination
        }
    }

    public var version: Version
    public var command: Command
    /// The client's endpoints, or nil when the connection's own stand: a `local` command, version 1's
    /// `UNKNOWN`, or a version 2 family or transport Sluice does not take addresses from (unspecified,
    /// UNIX, UDP), which the specification says to treat as unspecified.
    public var addresses: Addresses?

    public init(version: Version, command: Command = .proxy, addresses: Addresses?) {
        precondition(version == .v2 || command == .proxy, "version 1 has no LOCAL command")
        self.version = version
        self.command = command
        self.addresses = command == .local ? nil : addresses
    }

    /// The longest header `decode` accepts: version 2's 16 bytes and an address block with TLVs of up
    /// to 2 KiB (HAProxy sends 12 or 36 bytes of addresses, cloud balancers a few TLVs of tens of
    /// bytes). Version 1's limit is its own, 107 bytes.
    public static let maximumLength = 16 + 2048

    /// The header at the start of `bytes`, with how many bytes it takes; nil when `bytes` is a proper
    /// prefix of a header (read more and call again). Throws as soon as the bytes cannot begin one.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(ProxyHeaderError) -> (header: ProxyHeader, length: Int)? {
        if bytes.isEmpty { return nil }
        if bytes[0] == V2.signature[0] { return try V2.decode(bytes) }
        if bytes[0] == V1.prefix[0] { return try V1.decode(bytes) }
        throw .notProxyProtocol
    }

    /// The header's bytes. Version 1 writes `UNKNOWN` when there are no addresses; version 2 writes
    /// an unspecified family with an empty address block.
    public func encoded() -> [UInt8] {
        switch version {
        case .v1: return V1.encode(self)
        case .v2: return V2.encode(self)
        }
    }
}
