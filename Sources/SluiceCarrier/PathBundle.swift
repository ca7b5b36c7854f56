import SluiceLoop
import SluiceMux
import SluiceWire

/// What seals a `PathBundle`'s datagrams into a packet: the client's path, the relay's session.
public protocol PathBundleSealer: AnyObject {
    /// Seals what `bundle` holds as one packet (`PathHeader` of `bundle.kind`, the plaintext from
    /// `bundle.take(into:)`) into the turn's batch, now.
    func seal(_ bundle: PathBundle)
}

/// The datagrams one end has for a UDP path in one loop turn, gathered into one packet's plaintext
/// (docs/protocol.md §8, BUNDLE; feature bit 2), for both ends: the client's `UDPPathClient` keeps
/// one per path, the relay's `PathSession` one per client.
///
/// Why: a path packet costs an AEAD call (about 0.5 µs for a 100-byte packet: 0.45–0.47 µs to seal
/// or open through libgcrypt, `make microbench MICROBENCH_ARGS=path`) and a pass through both
/// kernels, per packet. Sixteen requests in flight on one UDP socket reach the path
/// together in one TUN read; sent one packet each they cost the client and the relay 1.7 µs more
/// per request than the carrier, which seals them all into one record (issue 14's note, perf and
/// /proc CPU per request). Gathered, they pay that once.
///
/// A datagram is never held for a later turn: what is here is sealed at the end of the turn that
/// brought it (`EventLoop.afterTurn`), or earlier when the next one would make the packet larger
/// than the path carries (`add`). One datagram alone goes as a plain DATAGRAM, byte for byte what an
/// end without the feature sends. Loop-confined like its owner.
public final class PathBundle {
    private unowned let loop: EventLoop
    /// Entries as a BUNDLE holds them: each a `length` u16 and a DATAGRAM plaintext.
    private let buffer: UnsafeMutableRawBufferPointer
    private var used = 0
    /// Datagrams held now.
    public private(set) var count = 0
    /// Who seals this at the end of the turn, while that is queued (`runTurnAction`).
    private var scheduledSealer: (any PathBundleSealer)?

    /// Room for one packet of the largest size UDP carries, sealed at the end of `loop`'s turns.
    public init(loop: EventLoop) {
        self.loop = loop
        buffer = .allocate(byteCount: 65_535 - PathHeader.length - PathHeader.tagLength, alignment: 16)
    }

    deinit { buffer.deallocate() }

    public var isEmpty: Bool { count == 0 }

    /// The packet's kind: a lone datagram is a DATAGRAM, more are a BUNDLE.
    public var kind: PathHeader.Kind { count == 1 ? .datagram : .bundle }

    /// Bytes of the packet's plaintext: a lone datagram without its entry's length.
    public var plaintextLength: Int { count == 1 ? used - PathMessage.bundleEntryPrefix : used }

    /// Whether a datagram of `datagramLength` plaintext bytes (`PathMessage.datagramOverhead` and
    /// data) still fits beside what is held, in a packet of at most `maxPacket` bytes. An empty
    /// bundle takes any datagram that fits a packet alone.
    public func fits(datagramLength: Int, maxPacket: Int) -> Bool {
        let room = min(maxPacket - PathHeader.length - PathHeader.tagLength, buffer.count)
        let prefix = PathMessage.bundleEntryPrefix
        return count == 0 ? datagramLength <= room : used + prefix + datagramLength <= room
    }

    /// Adds a datagram to the packet of this turn: `sealer` seals what is held first when the
    /// datagram would make it larger than `maxPacket`, and again at the end of the turn. The
    /// datagram must fit a packet alone (`fits` on an empty bundle).
    public func add(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer, maxPacket: Int,
                    sealer: some PathBundleSealer) {
        if !fits(datagramLength: PathMessage.datagramOverhead(endpoint: endpoint) + payload.count, maxPacket: maxPacket) {
            sealer.seal(self)
        }
        if scheduledSealer == nil {
            scheduledSealer = sealer  // held until the turn ends, which drops what it can no longer send
            loop.afterTurn(self)
        }
        append(stream: stream, endpoint: endpoint, payload: payload)
    }

    /// Adds a datagram; false when it does not fit the buffer (`fits` said so first).
    @discardableResult
    public func append(stream: UInt32, endpoint: SocketEndpoint, payload: UnsafeRawBufferPointer) -> Bool {
        guard let n = PathMessage.encodeBundleEntry(stream: stream, endpoint: endpoint, payload: payload,
                                                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[used...])) else { return false }
        used += n
        count += 1
        return true
    }

    /// Drops what is held (its path closed).
    public func removeAll() {
        used = 0
        count = 0
    }

    /// Writes the packet's plaintext (`plaintextLength` bytes, of `kind`) into `room` and empties
    /// the bundle; returns the length, or nil when it holds nothing or `room` is too small.
    public func take(into room: UnsafeMutableRawBufferPointer) -> Int? {
        let length = plaintextLength
        guard count > 0, length <= room.count else { return nil }
        let from = count == 1 ? PathMessage.bundleEntryPrefix : 0
        room.baseAddress!.copyMemory(from: buffer.baseAddress! + from, byteCount: length)
        removeAll()
        return length
    }
}

extension PathBundle: TurnAction {
    /// The end of the turn that brought the first datagram held: the sealer `add` was given seals.
    public func runTurnAction() {
        let sealer = scheduledSealer
        scheduledSealer = nil
        sealer?.seal(self)
    }
}
