import SluiceWire

extension ProxyHeader {
    /// Version 2: the 12-byte signature, version and command, family and transport, the length of
    /// what follows (big-endian), then the addresses — 12 bytes for TCP over IPv4, 36 over IPv6 —
    /// and optional TLVs, which Sluice skips.
    enum V2 {
        static let signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
        static let fixedLength = 16

        static func decode(_ bytes: UnsafeRawBufferPointer) throws(ProxyHeaderError) -> (header: ProxyHeader, length: Int)? {
            for i in 0..<min(bytes.count, signature.count) where bytes[i] != signature[i] { throw .notProxyProtocol }
            // Bytes 13 and 14 are checked as soon as they arrive: a wrong one ends the connection now.
            if bytes.count > 12 {
                let versionCommand = bytes[12]
                guard versionCommand >> 4 == 2 else { throw .badVersion(versionCommand >> 4) }
                guard versionCommand & 0x0F <= 1 else { throw .badCommand(versionCommand & 0x0F) }
            }
            if bytes.count > 13 {
                let familyTransport = bytes[13]
                guard familyTransport >> 4 <= 3, familyTransport & 0x0F <= 2 else { throw .badFamily(familyTransport) }
            }
            guard bytes.count >= fixedLength else { return nil }
            let blockLength = Int(bytes.readU16(at: 14))
            let length = fixedLength + blockLength
            guard length <= ProxyHeader.maximumLength else { throw .tooLong(length) }
            guard bytes.count >= length else { return nil }
            if bytes[12] & 0x0F == 0 {
                // LOCAL: the family and any addresses are to be ignored.
                return (ProxyHeader(version: .v2, command: .local, addresses: nil), length)
            }
            let familyTransport = bytes[13]
            let needed: Int
            switch familyTransport >> 4 {
            case 1: needed = 12
            case 2: needed = 36
            case 3: needed = 216
            default: needed = 0
            }
            guard blockLength >= needed else { throw .addressesTooShort(family: familyTransport, length: blockLength) }
            // Only TCP over IPv4 or IPv6 names a client Sluice can use; the other valid combinations
            // fall back to the connection's own endpoints, as the specification allows.
            guard familyTransport == 0x11 || familyTransport == 0x21 else {
                return (ProxyHeader(version: .v2, addresses: nil), length)
            }
            let v4 = familyTransport == 0x11
            let size = v4 ? 4 : 16
            let at = fixedLength
            let source = v4 ? IPAddress(v4In: bytes, at: at) : IPAddress(v6In: bytes, at: at)
            let destination = v4 ? IPAddress(v4In: bytes, at: at + size) : IPAddress(v6In: bytes, at: at + size)
            let sourcePort = bytes.readU16(at: at + 2 * size), destinationPort = bytes.readU16(at: at + 2 * size + 2)
            return (ProxyHeader(version: .v2, addresses: Addresses(source: SocketEndpoint(address: source, port: sourcePort),
                                                                   destination: SocketEndpoint(address: destination, port: destinationPort))),
                    length)
        }

        static func encode(_ header: ProxyHeader) -> [UInt8] {
            var out = signature
            out.append(header.command == .local ? 0x20 : 0x21)
            guard let a = header.addresses else {
                out += [0x00, 0x00, 0x00]
                return out
            }
            let v4 = a.source.address.isIPv4
            out.append(v4 ? 0x11 : 0x21)
            let block = a.source.address.bytes + a.destination.address.bytes
                + [UInt8(a.source.port >> 8), UInt8(a.source.port & 0xFF), UInt8(a.destination.port >> 8), UInt8(a.destination.port & 0xFF)]
            out += [UInt8(block.count >> 8), UInt8(block.count & 0xFF)]
            return out + block
        }
    }
}
