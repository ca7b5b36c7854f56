/// A carrier's UDP path (docs/protocol.md §8), at either end — the client's socket and probes
/// (SluiceTunnel's `UDPPathClient`), or the relay's session in its table (`PathSession`) — as the
/// carrier that owns it sees it. Loop-confined like the carrier.
public protocol CarrierUDPPath: AnyObject {
    /// The carrier closed: the path ends with it (its streams are reset already).
    func carrierDidClose()
    /// Relay side: the client's UDP_PATH_USE — send this carrier's datagrams on the path, or not.
    func peerUses(_ use: Bool)
}

extension CarrierUDPPath {
    public func peerUses(_ use: Bool) {}
}
