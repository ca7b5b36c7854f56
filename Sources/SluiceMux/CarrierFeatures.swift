/// Feature bits: what a carrier may use beyond the base protocol of version 1 (docs/protocol.md §1.1).
///
/// The relay advertises its bits in handshake message 2, a client that saw any answers with HELLO
/// (its own bits) as its first frame, and the features in effect are the intersection
/// (`FeatureNegotiation`). Bits this build does not know survive decoding and encoding, and simply
/// never make it into an intersection.
public struct CarrierFeatures: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Bit 0: the relay may refuse by policy with RESET reason 6 `forbidden` and DATAGRAM_ERROR code
    /// 4 `forbidden`. Without it the relay says `refused` (TCP) or `unreachable` (UDP) instead, which
    /// a client of the base protocol understands.
    public static let policyRefusals = CarrierFeatures(rawValue: 1 << 0)

    /// Bit 1: the relay offers an encrypted UDP path beside the carrier for its UDP associations'
    /// datagrams (UDP_PATH, UDP_PATH_USE; docs/protocol.md §8). Without it every datagram rides the
    /// carrier.
    public static let udpPath = CarrierFeatures(rawValue: 1 << 1)

    /// Bit 2: a UDP path packet may carry several datagrams (BUNDLE, docs/protocol.md §8), so the
    /// datagrams one loop turn has for the path share a packet and its AEAD instead of paying one
    /// each. Meaningful only beside bit 1; without it every path packet holds one datagram.
    public static let udpPathBundles = CarrierFeatures(rawValue: 1 << 2)

    /// Bit 3: a datagram on the UDP path may open its association (docs/protocol.md §8, item 11): the
    /// client sends a new association's first datagrams on the path at once instead of behind its
    /// OPEN on the carrier, and the relay opens the association from the first of OPEN and path
    /// datagram to arrive. Meaningful only beside bit 1; without it a new association's datagrams
    /// ride the carrier until OPEN_OK arrives.
    public static let udpPathOpens = CarrierFeatures(rawValue: 1 << 3)

    /// The bits that mean something only where the UDP path is in effect (bit 1 with them).
    public static let udpPathFamily: CarrierFeatures = [.udpPath, .udpPathBundles, .udpPathOpens]

    /// What this build implements: what its relay advertises and its client offers in HELLO.
    public static let implemented: CarrierFeatures = [.policyRefusals, .udpPath, .udpPathBundles, .udpPathOpens]

    /// `policy-refusals`, `none`, or the names followed by unknown bits in hex (`policy-refusals+0x80`).
    public var description: String {
        var names: [String] = []
        if contains(.policyRefusals) { names.append("policy-refusals") }
        if contains(.udpPath) { names.append("udp-path") }
        if contains(.udpPathBundles) { names.append("udp-path-bundles") }
        if contains(.udpPathOpens) { names.append("udp-path-opens") }
        let unknown = subtracting(.implemented).rawValue
        if unknown != 0 { names.append("0x" + String(unknown, radix: 16)) }
        return names.isEmpty ? "none" : names.joined(separator: "+")
    }
}
