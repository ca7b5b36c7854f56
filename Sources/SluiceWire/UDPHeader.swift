/// The fields of a UDP header as plain values; the length comes from the buffer `emit` is given.
public struct UDPHeader: Hashable, Sendable {
    public var sourcePort: UInt16
    public var destinationPort: UInt16

    public static let length = 8

    public init(sourcePort: UInt16, destinationPort: UInt16) {
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
    }

    public init(_ datagram: UDPDatagram) {
        self.init(sourcePort: datagram.sourcePort, destinationPort: datagram.destinationPort)
    }

    /// Writes the header at the start of `datagram` and fills in length and checksum.
    ///
    /// `datagram` is the whole datagram: 8 header bytes, then the payload, already in place. A
    /// computed checksum of zero is sent as `0xFFFF` (RFC 768), so the checksum is always present.
    /// Traps if `datagram` is shorter than 8 or longer than 65535 bytes, or the addresses differ in
    /// family: all are caller bugs.
    public func emit(into datagram: UnsafeMutableRawBufferPointer, source: IPAddress, destination: IPAddress) {
        precondition(datagram.count >= UDPHeader.length, "buffer too small for the UDP header")
        precondition(datagram.count <= 0xFFFF, "UDP datagram longer than 65535 bytes")
        precondition(source.isIPv4 == destination.isIPv4, "pseudo-header addresses of different families")
        datagram.writeU16(sourcePort, at: 0)
        datagram.writeU16(destinationPort, at: 2)
        datagram.writeU16(UInt16(datagram.count), at: 4)
        datagram.writeU16(0, at: 6)
        let pseudo = Checksum.pseudoHeaderSum(
            source: source, destination: destination, protocol: .udp, length: datagram.count)
        let sum = Checksum.checksum(UnsafeRawBufferPointer(datagram), pseudoHeaderSum: pseudo)
        datagram.writeU16(sum == 0 ? 0xFFFF : sum, at: 6)
    }
}
