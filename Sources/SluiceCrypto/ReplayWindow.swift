/// The receiver's replay protection of a UDP path (docs/protocol.md §8): WireGuard's sliding window
/// over packet counters (RFC 6479's bitmap in a ring of 64-bit blocks, as wireguard-go's
/// `replay.Filter` keeps it). A counter is accepted once; one more than `size` behind the newest
/// accepted is too old. Nothing is retransmitted on the path, so a lost counter is simply never
/// seen; reordering within the window is harmless.
///
/// Check a packet with `wouldAccept` before decrypting it (a replay costs no AEAD), and record it
/// with `accept` only after it authenticated: a forged packet must not move the window.
/// Written by hand: no Debian library offers a replay window apart from a whole VPN.
public struct ReplayWindow: Sendable {
    private static let blockBits: UInt64 = 64
    private static let ringBlocks: UInt64 = 64
    /// How far behind the newest accepted counter a packet may still arrive (4,032).
    public static let size = (ringBlocks - 1) * blockBits
    /// Counters from here on are refused: a sender stops using the path before it gets there.
    public static let counterLimit: UInt64 = 1 << 63

    private var newest: UInt64 = 0
    private var ring = [UInt64](repeating: 0, count: Int(ringBlocks))

    public init() {}

    /// Whether `accept(counter)` would take it now; changes nothing.
    public func wouldAccept(_ counter: UInt64) -> Bool {
        guard counter < Self.counterLimit else { return false }
        if counter > newest { return true }
        guard newest - counter <= Self.size else { return false }
        return ring[Self.block(counter)] & Self.bit(counter) == 0
    }

    /// Records `counter` as seen; false when it is a replay, too old or at the limit.
    public mutating func accept(_ counter: UInt64) -> Bool {
        guard counter < Self.counterLimit else { return false }
        if counter > newest {
            // Clear the blocks the window slides over (all of them after a long jump).
            let current = newest / Self.blockBits
            let steps = min(counter / Self.blockBits - current, Self.ringBlocks)
            var i: UInt64 = 1
            while i <= steps {
                ring[Int((current + i) % Self.ringBlocks)] = 0
                i += 1
            }
            newest = counter
        } else if newest - counter > Self.size {
            return false
        }
        let block = Self.block(counter)
        let old = ring[block]
        ring[block] = old | Self.bit(counter)
        return old & Self.bit(counter) == 0
    }

    private static func block(_ counter: UInt64) -> Int { Int((counter / blockBits) % ringBlocks) }
    private static func bit(_ counter: UInt64) -> UInt64 { 1 << (counter % blockBits) }
}
