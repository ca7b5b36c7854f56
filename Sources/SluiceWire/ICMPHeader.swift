/// The 8-byte header of an ICMP or ICMPv6 message as plain values: parse one out of an
/// `ICMPv4Message` or `ICMPv6Message`, or fill one in and `emit` it.
public struct ICMPHeader: Hashable, Sendable {
    public var type: UInt8
    public var code: UInt8
    /// Bytes 4–7: identifier and sequence number of an echo, the MTU of a "too big", otherwise
    /// usually zero.
    public var rest: UInt32

    public static let length = 8

    public init(type: UInt8, code: UInt8, rest: UInt32 = 0) {
        self.type = type
        self.code = code
        self.rest = rest
    }

    /// An echo request or reply header.
    public init(echoType type: UInt8, identifier: UInt16, sequenceNumber: UInt16) {
        self.init(type: type, code: 0, rest: UInt32(identifier) << 16 | UInt32(sequenceNumber))
    }

    public init(_ message: some ICMPMessageView) {
        self.init(type: message.type, code: message.code, rest: message.rest)
    }

    /// ICMP over IPv4: writes the header at the start of `message` and the checksum over all of it.
    ///
    /// `message` is the whole message, the body already in place. Traps if it is shorter than 8 or
    /// longer than 65535 bytes: caller bugs.
    public func emit(into message: UnsafeMutableRawBufferPointer) {
        write(into: message)
        message.writeU16(Checksum.checksum(UnsafeRawBufferPointer(message)), at: 2)
    }

    /// ICMPv6: writes the header at the start of `message` and the checksum over the pseudo-header
    /// (RFC 4443 §2.3) and all of `message`.
    ///
    /// Traps if `message` is shorter than 8 or longer than 65535 bytes, or an address is not IPv6:
    /// caller bugs.
    public func emit(into message: UnsafeMutableRawBufferPointer, source: IPAddress, destination: IPAddress) {
        precondition(!source.isIPv4 && !destination.isIPv4, "ICMPv6 pseudo-header with an IPv4 address")
        write(into: message)
        let pseudo = ICMPHeader.pseudoHeaderSum(source: source, destination: destination, length: message.count)
        message.writeU16(Checksum.checksum(UnsafeRawBufferPointer(message), pseudoHeaderSum: pseudo), at: 2)
    }

    private func write(into message: UnsafeMutableRawBufferPointer) {
        precondition(message.count >= ICMPHeader.length, "buffer too small for the ICMP header")
        precondition(message.count <= 0xFFFF, "ICMP message longer than 65535 bytes")
        message[0] = type
        message[1] = code
        message.writeU16(0, at: 2)
        message.writeU32(rest, at: 4)
    }

    /// The ICMPv6 pseudo-header sum (next header 58).
    static func pseudoHeaderSum(source: IPAddress, destination: IPAddress, length: Int) -> UInt16 {
        Checksum.pseudoHeaderSum(source: source, destination: destination, protocol: .icmpv6, length: length)
    }
}
