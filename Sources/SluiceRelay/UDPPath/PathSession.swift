import SluiceCarrier
import SluiceCrypto
import SluiceLog
import SluiceLoop
import SluiceMux
import SluiceWire

/// The relay's end of one carrier's UDP path (docs/protocol.md §8): its index, keys, replay window
/// and send counter, the client's address as the last authenticated packet showed it, and whether
/// the client asked for datagrams on the path (UDP_PATH_USE). Made by `RelayUDPPath` when the
/// client's HELLO put the feature in effect; ends with its carrier. Loop-confined.
final class PathSession: CarrierUDPPath, MuxDatagramPath, PathBundleSealer {
    let index: UInt32
    let client: ClientID
    unowned let carrier: Carrier
    private unowned let owner: RelayUDPPath
    let opener: PathCipher
    let sealer: PathCipher
    var window = ReplayWindow()
    /// The counter of the next packet this end sends.
    var sendCounter: UInt64 = 0
    /// Where the client's packets come from: set by the first one that authenticates and moved by
    /// any later one from elsewhere (NAT rebinding, roaming), never by one that does not.
    var peer: SocketEndpoint?
    /// The client validated the path and asked for its datagrams there (UDP_PATH_USE 1).
    private(set) var inUse = false
    /// The largest packet to send the client: the length of its latest PROBE, which it pads to the
    /// largest it sends, so the path has carried that size (the reply has it too).
    var maxPacket = 0
    private(set) var closed = false
    /// Datagrams for the client this turn, not yet sealed, where bundles are in effect.
    let pending: PathBundle

    init(index: UInt32, client: ClientID, carrier: Carrier, keys: PathKeys, owner: RelayUDPPath, loop: EventLoop) {
        self.index = index
        self.client = client
        self.carrier = carrier
        self.owner = owner
        opener = PathCipher(key: keys.receiving)
        sealer = PathCipher(key: keys.sending)
        pending = PathBundle(loop: loop)
    }

    // MARK: PathBundleSealer

    func seal(_ bundle: PathBundle) { owner.seal(bundle, of: self) }

    // MARK: MuxDatagramPath

    func send(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer) -> Bool {
        guard inUse, let peer, !closed else { return false }
        return owner.sendDatagram(on: self, to: peer, stream: stream, endpoint: endpoint, payload: payload)
    }

    // MARK: CarrierUDPPath

    func carrierDidClose() {
        closed = true
        owner.remove(self)
    }

    func peerUses(_ use: Bool) {
        guard use != inUse else { return }
        inUse = use
        Log.debug("carrier \(carrier.label): the client \(use ? "uses" : "stopped using") the UDP path"
                  + (peer.map { " (from \($0))" } ?? ""), "relay")
    }
}
