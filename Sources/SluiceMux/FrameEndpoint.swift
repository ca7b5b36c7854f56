import SluiceWire

/// The endpoint of a DATAGRAM or DATAGRAM_ERROR frame: `addrType` u8 (1 = IPv4, 4 = IPv6), the
/// address, `port` u16 — OPEN's destination encoding without the domain form (docs/protocol.md §3).
enum FrameEndpoint {
    /// Bytes of the encoding: 7 for IPv4, 19 for IPv6.
    static func encodedLength(_ endpoint: SocketEndpoint) -> Int { 1 + endpoint.address.byteCount + 2 }

    /// Writes the encoding at `offset` and returns the offset after it; the caller checked the room.
    static func encode(_ endpoint: SocketEndpoint, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        buffer[offset] = endpoint.address.isIPv4 ? Destination.AddressType.ipv4 : Destination.AddressType.ipv6
        endpoint.address.store(into: buffer, at: offset + 1)
        let at = offset + 1 + endpoint.address.byteCount
        buffer.writeU16(endpoint.port, at: at)
        return at + 2
    }

    /// Decodes an endpoint from the start of `bytes`; returns it and the bytes it took. Throws
    /// `.truncated` if `bytes` ends inside it and `.badAddressType` for anything but 1 and 4.
    static func decode(from bytes: UnsafeRawBufferPointer) throws(FrameError) -> (SocketEndpoint, length: Int) {
        guard let type = bytes.first else { throw .truncated }
        let address: IPAddress
        switch type {
        case Destination.AddressType.ipv4:
            guard bytes.count >= 1 + 4 + 2 else { throw .truncated }
            address = IPAddress(v4In: bytes, at: 1)
        case Destination.AddressType.ipv6:
            guard bytes.count >= 1 + 16 + 2 else { throw .truncated }
            address = IPAddress(v6In: bytes, at: 1)
        default:
            throw .badAddressType(type)
        }
        let at = 1 + address.byteCount
        return (SocketEndpoint(address: address, port: bytes.readU16(at: at)), at + 2)
    }
}
