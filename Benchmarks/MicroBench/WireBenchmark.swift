import CSluiceShims
import SluiceWire

/// Packet parse and emit with SluiceWire on one core, no I/O.
///
/// - parse: `PacketSummary(parsing:)` of 1500-byte packets as the client's TUN dispatch calls it
///   (IPv4 header checksum only), and with every checksum verified (`.all`: the payload is summed);
/// - checksum: the Internet checksum over 1500 bytes and 64 KiB — SluiceWire's `Checksum.sum`, the C
///   routine the sluice executable gives lwIP (`sluice_checksum_native`, CSluiceShims/checksum.c), and
///   the reference with Debian lwIP's own 16-bit loop (what lwIP would run without that override);
/// - emit: the packets the client synthesises — RST refusing a SYN, UDP replies, an echo reply.
///
/// `SegmentCoalescer` (TUN GSO output) is not here: it takes a write closure, not a TUN fd, but it is
/// internal to SluiceClient, so this executable cannot reach it without widening its access.
enum WireBenchmark {
    static let app4 = SocketEndpoint("10.0.0.2:40000")!, server4 = SocketEndpoint("203.0.113.7:443")!
    static let app6 = SocketEndpoint("[fd00::2]:40000")!, server6 = SocketEndpoint("[2001:db8::7]:443")!

    static func run() {
        parse()
        checksum()
        emit()
    }

    // MARK: parse

    private static func parse() {
        let packets: [(String, [UInt8])] = [
            ("IPv4/TCP", tcpPacket(from: app4, to: server4, flags: [.ack], payload: 1460)),
            ("IPv6/TCP", tcpPacket(from: app6, to: server6, flags: [.ack], payload: 1440)),
            ("IPv4/UDP", udpPacket(from: app4, to: server4, payload: 1472)),
        ]
        var rows: [[String]] = [], json: [[(String, String)]] = []
        for (name, packet) in packets {
            let header = packetsPerSecond(packet, checks: .ipv4Header)
            let all = packetsPerSecond(packet, checks: .all)
            rows.append([name, String(packet.count), Bench.format(header / 1e6), Bench.format(1e9 / header, decimals: 1),
                         Bench.format(all / 1e6), Bench.format(1e9 / all, decimals: 1)])
            json.append([("op", Bench.quoted("parse")), ("packet", Bench.quoted(name)), ("bytes", String(packet.count)),
                         ("mpps", Bench.format(header / 1e6)), ("ns_per_packet", Bench.format(1e9 / header, decimals: 1)),
                         ("all_checks_mpps", Bench.format(all / 1e6)),
                         ("all_checks_ns_per_packet", Bench.format(1e9 / all, decimals: 1))])
        }
        Bench.printTable(["PacketSummary", "bytes", "Mpps", "ns/pkt", "Mpps .all", "ns/pkt .all"], rows)
        Bench.printJSON("wire.parse", json)
    }

    private static func packetsPerSecond(_ packet: [UInt8], checks: PacketSummary.Checks) -> Double {
        packet.withUnsafeBytes { bytes in
            Bench.rate {
                var sink = 0
                for _ in 0..<1000 {
                    let summary = try! PacketSummary(parsing: bytes, checks: checks)
                    sink &+= summary.payloadRange.count &+ Int(summary.destination.port)
                }
                Bench.keep(sink)
                return 1000
            }
        }
    }

    // MARK: checksum

    private static func checksum() {
        var rows: [[String]] = [], json: [[(String, String)]] = []
        for size in [1500, 65536] {
            var data = [UInt8](repeating: 0, count: size)
            var x: UInt32 = 0x9E37_79B9
            for i in data.indices {
                x ^= x << 13; x ^= x >> 17; x ^= x << 5
                data[i] = UInt8(truncatingIfNeeded: x)
            }
            let calls = max(1, 1_000_000 / size)
            let (swift, c, reference) = data.withUnsafeBytes { bytes -> (Double, Double, Double) in
                precondition(UInt16(bigEndian: sluice_checksum_native(bytes.baseAddress, Int32(size))) == Checksum.sum(bytes),
                             "the C and Swift checksums disagree")
                let swift = Bench.rate {
                    var sink: UInt16 = 0
                    for _ in 0..<calls { sink &+= Checksum.sum(Bench.opaque(bytes)) }
                    Bench.keep(sink)
                    return calls * size
                }
                let c = Bench.rate {
                    var sink: UInt16 = 0
                    for _ in 0..<calls { sink &+= sluice_checksum_native(Bench.opaque(bytes).baseAddress, Int32(size)) }
                    Bench.keep(sink)
                    return calls * size
                }
                let reference = Bench.rate {
                    var sink: UInt16 = 0
                    for _ in 0..<calls { sink &+= sluice_reference_chksum(Bench.opaque(bytes).baseAddress, Int32(size)) }
                    Bench.keep(sink)
                    return calls * size
                }
                return (swift, c, reference)
            }
            rows.append([String(size), Bench.format(swift / 1e9), Bench.format(c / 1e9), Bench.format(reference / 1e9)])
            json.append([("op", Bench.quoted("checksum")), ("bytes", String(size)), ("swift_gbps", Bench.format(swift / 1e9)),
                         ("c_gbps", Bench.format(c / 1e9)), ("lwip_reference_gbps", Bench.format(reference / 1e9))])
        }
        Bench.printTable(["checksum bytes", "Checksum.sum GB/s", "C (lwIP's) GB/s", "lwIP reference GB/s"], rows)
        Bench.printJSON("wire.checksum", json)
    }

    // MARK: emit

    private static func emit() {
        let syn4 = tcpPacket(from: app4, to: server4, flags: [.syn], payload: 0)
        let syn6 = tcpPacket(from: app6, to: server6, flags: [.syn], payload: 0)
        let ping4 = echoRequest(from: app4.address, to: server4.address, payload: 56)
        let cases: [(String, (UnsafeMutableRawBufferPointer) -> Int)] = [
            ("TCP RST for a SYN, IPv4", { out in syn4.withUnsafeBytes { try! TCPReset.emit(answering: $0, into: out) } }),
            ("TCP RST for a SYN, IPv6", { out in syn6.withUnsafeBytes { try! TCPReset.emit(answering: $0, into: out) } }),
            ("UDP reply 64 B, IPv4", udpReply(from: server4, to: app4, payload: 64)),
            ("UDP reply 1472 B, IPv4", udpReply(from: server4, to: app4, payload: 1472)),
            ("UDP reply 1452 B, IPv6", udpReply(from: server6, to: app6, payload: 1452)),
            ("ICMP echo reply 84 B, IPv4", { out in ping4.withUnsafeBytes { try! ICMPEchoReply.emit(answering: $0, into: out) } }),
        ]
        var output = [UInt8](repeating: 0, count: 65536)
        var rows: [[String]] = [], json: [[(String, String)]] = []
        for (name, body) in cases {
            let (rate, length) = output.withUnsafeMutableBytes { out -> (Double, Int) in
                let length = body(out)
                // Whatever was emitted must parse as what it claims to be.
                let check = try? PacketSummary(parsing: UnsafeRawBufferPointer(rebasing: out[0..<length]), checks: .all)
                precondition(check != nil || name.hasPrefix("ICMP"), "\(name): the emitted packet does not parse")
                let rate = Bench.rate {
                    for _ in 0..<1000 { Bench.keep(body(out)) }
                    return 1000
                }
                return (rate, length)
            }
            rows.append([name, String(length), Bench.format(rate / 1e6), Bench.format(1e9 / rate, decimals: 1)])
            json.append([("op", Bench.quoted("emit")), ("packet", Bench.quoted(name)), ("bytes", String(length)),
                         ("mpps", Bench.format(rate / 1e6)), ("ns_per_packet", Bench.format(1e9 / rate, decimals: 1))])
        }
        Bench.printTable(["emit", "bytes", "Mpps", "ns/pkt"], rows)
        Bench.printJSON("wire.emit", json)
    }

    private static func udpReply(from source: SocketEndpoint, to destination: SocketEndpoint, payload: Int) -> (UnsafeMutableRawBufferPointer) -> Int {
        let data = [UInt8](repeating: 0x5a, count: payload)
        return { out in data.withUnsafeBytes { try! UDPPacket.emit(from: source, to: destination, payload: $0, into: out) } }
    }

    // MARK: packets

    /// An IP packet carrying a TCP segment of `payload` pattern bytes, checksums included.
    static func tcpPacket(from source: SocketEndpoint, to destination: SocketEndpoint, flags: TCPFlags, payload: Int) -> [UInt8] {
        let tcp = TCPHeader(sourcePort: source.port, destinationPort: destination.port, sequenceNumber: 1000,
                            acknowledgmentNumber: flags.contains(.ack) ? 2000 : 0, flags: flags, window: 65535,
                            maximumSegmentSize: flags.contains(.syn) ? 1460 : nil)
        let ipLength = source.address.isIPv4 ? IPv4Header.length : IPv6Header.length
        let segmentLength = tcp.length + payload
        var packet = [UInt8](repeating: 0, count: ipLength + segmentLength)
        packet.withUnsafeMutableBytes { buffer in
            ipHeader(source.address, destination.address, .tcp, segmentLength, into: buffer)
            let segment = UnsafeMutableRawBufferPointer(rebasing: buffer[ipLength...])
            for i in tcp.length..<segmentLength { segment[i] = UInt8(truncatingIfNeeded: i &* 7) }
            tcp.emit(into: segment, source: source.address, destination: destination.address)
        }
        return packet
    }

    static func udpPacket(from source: SocketEndpoint, to destination: SocketEndpoint, payload: Int) -> [UInt8] {
        let data = (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var packet = [UInt8](repeating: 0, count: UDPPacket.headerLength(for: source.address) + payload)
        _ = packet.withUnsafeMutableBytes { out in
            data.withUnsafeBytes { try! UDPPacket.emit(from: source, to: destination, payload: $0, into: out) }
        }
        return packet
    }

    /// An IPv4 ICMP echo request with `payload` data bytes.
    static func echoRequest(from source: IPAddress, to destination: IPAddress, payload: Int) -> [UInt8] {
        let icmpLength = 8 + payload
        var packet = [UInt8](repeating: 0, count: IPv4Header.length + icmpLength)
        packet.withUnsafeMutableBytes { buffer in
            ipHeader(source, destination, .icmp, icmpLength, into: buffer)
            let icmp = UnsafeMutableRawBufferPointer(rebasing: buffer[IPv4Header.length...])
            icmp[0] = 8  // echo request, code 0
            icmp.writeU16(0x1234, at: 4)
            icmp.writeU16(1, at: 6)
            for i in 8..<icmpLength { icmp[i] = UInt8(truncatingIfNeeded: i) }
            icmp.writeU16(Checksum.checksum(UnsafeRawBufferPointer(icmp)), at: 2)
        }
        return packet
    }

    private static func ipHeader(_ source: IPAddress, _ destination: IPAddress, _ proto: IPProtocol, _ payloadLength: Int,
                                 into buffer: UnsafeMutableRawBufferPointer) {
        if source.isIPv4 {
            IPv4Header(source: source, destination: destination, protocol: proto, payloadLength: payloadLength).emit(into: buffer)
        } else {
            IPv6Header(source: source, destination: destination, nextHeader: proto, payloadLength: payloadLength).emit(into: buffer)
        }
    }
}
