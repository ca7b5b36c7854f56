/// A request's CMD (RFC 1928 §4).
public enum SocksCommand: UInt8, Sendable {
    case connect = 1
    case bind = 2
    case udpAssociate = 3
}

/// The client's request (RFC 1928 §4): what to connect to, or to associate for UDP.
///
/// ```
/// +-----+-----+-------+------+----------+----------+
/// | VER | CMD |  RSV  | ATYP | DST.ADDR | DST.PORT |
/// |  1  |  1  | X'00' |  1   | Variable |    2     |
/// +-----+-----+-------+------+----------+----------+
/// ```
public struct SocksRequest: Hashable, Sendable {
    public var command: SocksCommand
    public var address: SocksAddress

    public init(command: SocksCommand, address: SocksAddress) {
        self.command = command
        self.address = address
    }

    public func encoded() throws(SocksError) -> [UInt8] {
        var out: [UInt8] = [SocksGreeting.version, command.rawValue, 0]
        out.reserveCapacity(3 + address.encodedLength)
        try address.encode(into: &out)
        return out
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(SocksError) -> Decoded<SocksRequest>? {
        var r = ByteReader(bytes)
        guard let version = r.byte() else { return nil }
        guard version == SocksGreeting.version else { throw .badVersion(version, expected: SocksGreeting.version) }
        guard let rawCommand = r.byte() else { return nil }
        guard let command = SocksCommand(rawValue: rawCommand) else { throw .badCommand(rawCommand) }
        guard let reserved = r.byte() else { return nil }
        guard reserved == 0 else { throw .badReserved }
        guard let address = try SocksAddress.decode(&r) else { return nil }
        return Decoded(value: SocksRequest(command: command, address: address), length: r.offset)
    }
}
