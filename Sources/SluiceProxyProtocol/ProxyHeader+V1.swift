import SluiceWire

extension ProxyHeader {
    /// Version 1: one ASCII line, `PROXY TCP4|TCP6 SRC DST SPORT DPORT\r\n` or `PROXY UNKNOWN…\r\n`,
    /// at most 107 bytes. Parsed strictly, as the specification asks: single spaces, no leading
    /// zeros, the addresses of the family named, CRLF and nothing else to end it.
    enum V1 {
        static let prefix = Array("PROXY ".utf8)
        static let maximumLength = 107
        private static let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")

        static func decode(_ bytes: UnsafeRawBufferPointer) throws(ProxyHeaderError) -> (header: ProxyHeader, length: Int)? {
            for i in 0..<min(bytes.count, prefix.count) where bytes[i] != prefix[i] { throw .notProxyProtocol }
            let window = min(bytes.count, maximumLength)
            var end: Int?
            for i in 0..<window where bytes[i] == cr || bytes[i] == lf {
                if bytes[i] == lf { throw .badLine("a line ending in LF without CR") }
                guard i + 1 < bytes.count else { return nil }  // the LF may follow
                guard bytes[i + 1] == lf else { throw .badLine("CR without LF") }
                guard i + 2 <= maximumLength else { throw .lineTooLong }
                end = i
                break
            }
            guard let end else {
                if bytes.count >= maximumLength { throw .lineTooLong }
                return nil
            }
            let line = bytes[prefix.count..<end]  // the prefix holds no CR, so `end` is past it
            guard line.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .badLine("bytes that are not printable ASCII") }
            let fields = String(decoding: line, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            let length = end + 2
            if fields[0] == "UNKNOWN" {
                // The rest of an UNKNOWN line is to be ignored, whatever it holds.
                return (ProxyHeader(version: .v1, addresses: nil), length)
            }
            guard fields[0] == "TCP4" || fields[0] == "TCP6" else {
                throw .badLine("protocol \"\(fields[0].prefix(16))\", expected TCP4, TCP6 or UNKNOWN")
            }
            guard fields.count == 5 else {
                throw .badLine("\(fields.count - 1) fields after \(fields[0]), expected source, destination and two ports, one space apart")
            }
            let v4 = fields[0] == "TCP4"
            let source = try address(fields[1], v4: v4), destination = try address(fields[2], v4: v4)
            let sourcePort = try port(fields[3]), destinationPort = try port(fields[4])
            return (ProxyHeader(version: .v1, addresses: Addresses(source: SocketEndpoint(address: source, port: sourcePort),
                                                                   destination: SocketEndpoint(address: destination, port: destinationPort))),
                    length)
        }

        private static func address(_ text: String, v4: Bool) throws(ProxyHeaderError) -> IPAddress {
            guard let address = IPAddress(text), address.isIPv4 == v4 else {
                throw .badLine("\"\(text.prefix(45))\" is not an \(v4 ? "IPv4" : "IPv6") address")
            }
            if v4, text.split(separator: ".").contains(where: { $0.count > 1 && $0.first == "0" }) {
                throw .badLine("\"\(text)\" has a leading zero")
            }
            return address
        }

        private static func port(_ text: String) throws(ProxyHeaderError) -> UInt16 {
            guard (1...5).contains(text.count), text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  text.count == 1 || text.first != "0", let value = UInt16(text) else {
                throw .badLine("\"\(text.prefix(8))\" is not a port (0 to 65535, no leading zero)")
            }
            return value
        }

        static func encode(_ header: ProxyHeader) -> [UInt8] {
            guard let a = header.addresses else { return Array("PROXY UNKNOWN\r\n".utf8) }
            let family = a.source.address.isIPv4 ? "TCP4" : "TCP6"
            return Array("PROXY \(family) \(a.source.address) \(a.destination.address) \(a.source.port) \(a.destination.port)\r\n".utf8)
        }
    }
}
