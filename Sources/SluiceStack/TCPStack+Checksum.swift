import CLwIP
import CSluiceShims
import SluiceWire

/// How lwIP treats the TCP checksum of a segment handed to `TCPStack.input(_:summary:checksum:)`.
public enum SegmentChecksum: Sendable {
    /// lwIP verifies it, as it does every segment on its own: a packet from anywhere.
    case verify
    /// The local kernel made the segment and handed it over with its checksum left to the device (a
    /// TUN with offloads: NEEDS_CSUM, the kernel's CHECKSUM_PARTIAL), so its bytes never crossed a
    /// wire: lwIP takes it without a pass over it, and the checksum field need not be completed —
    /// as the kernel's own receive path takes such a packet from a veth or loopback unverified.
    /// Only where `TCPStack.takesUnverifiedSegments`, and never for a SYN (a held SYN is fed again
    /// later, verified).
    case locallyMade
}

extension TCPStack {
    /// Whether lwIP's checksum calls reach Sluice's routine (CSluiceShims/checksum.c, which an
    /// executable exports: Package.swift), the one way to let a segment in unverified — Debian's
    /// lwIP has no per-netif switch for its checks. Found out once, on a sample, with lwIP's own
    /// `inet_chksum`; false where the routine is not exported (an embedding app, the test bundles),
    /// and then every segment's checksum is completed and verified as usual.
    public static let takesUnverifiedSegments: Bool = {
        var sample = [UInt8](repeating: 0xA5, count: 64)
        return sample.withUnsafeMutableBytes { buffer in
            sluice_checksum_expect(buffer.baseAddress!, 64, 0x1234)
            defer { sluice_checksum_expect_none() }
            return inet_chksum(buffer.baseAddress!, 64) == ~UInt16(0x1234)
        }
    }()

    /// The sum that makes lwIP's verification of a `length`-byte TCP segment from `source` to
    /// `destination` pass: what it adds to its pseudo-header sum to get all ones, the complement of
    /// that sum, in lwIP's byte order (it sums the bytes as they lie in memory).
    static func passingSum(source: IPAddress, destination: IPAddress, length: Int) -> UInt16 {
        (~Checksum.pseudoHeaderSum(source: source, destination: destination, protocol: .tcp, length: length)).bigEndian
    }
}
