import SluiceTestSupport
import XCTest

@testable import SluiceWire

final class FragmentReassemblerTests: XCTestCase {
    /// `FragmentReassembler.Outcome` with the packet copied out, so results can be compared.
    enum Got: Equatable {
        case unfragmented, held
        case reassembled([UInt8])
        case dropped(FragmentReassembler.Drop)
    }

    private func feed(_ r: FragmentReassembler, _ packet: [UInt8], now: UInt64 = 0) -> Got {
        packet.withUnsafeBytes { b in
            switch r.feed(b, now: now) {
            case .unfragmented: return .unfragmented
            case .held: return .held
            case .reassembled(let p): return .reassembled(Array(p))
            case .dropped(let d): return .dropped(d)
            }
        }
    }

    /// Feeds all `packets`; returns the outcome of the last and checks the others were held.
    private func feedAll(_ r: FragmentReassembler, _ packets: [[UInt8]], now: UInt64 = 0, file: StaticString = #filePath, line: UInt = #line) -> Got {
        for packet in packets.dropLast() {
            XCTAssertEqual(feed(r, packet, now: now), .held, file: file, line: line)
        }
        return feed(r, packets.last!, now: now)
    }

    // MARK: building packets

    private func udp(_ source: String, _ destination: String, payload: Int, identification: UInt16 = 0x4D2, seed: Int = 1) -> [UInt8] {
        let s = SocketEndpoint(source)!, d = SocketEndpoint(destination)!
        let bytes = (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ seed) }
        var out = [UInt8](repeating: 0, count: UDPPacket.headerLength(for: s.address) + payload)
        _ = bytes.withUnsafeBytes { p in
            out.withUnsafeMutableBytes {
                try! UDPPacket.emit(from: s, to: d, payload: p, identification: identification, dontFragment: false, into: $0)
            }
        }
        return out
    }

    private func split(_ packet: [UInt8], mtu: Int, identification: UInt32 = 0x0102_0304) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var scratch = [UInt8](repeating: 0, count: mtu)
        packet.withUnsafeBytes { p in
            scratch.withUnsafeMutableBytes { s in
                if packet[0] >> 4 == 4 {
                    _ = try! IPv4Fragmenter.fragment(p, mtu: mtu, scratch: s) { out.append(Array($0)) }
                } else {
                    _ = try! IPv6Fragmenter.fragment(p, mtu: mtu, identification: identification, scratch: s) { out.append(Array($0)) }
                }
            }
        }
        return out
    }

    /// A raw IPv4 fragment: `data` at byte `offset`, MF as given, header checksum right.
    private func fragment4(id: UInt16 = 7, offset: Int, more: Bool, data: [UInt8], source: String = "10.0.0.1") -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20 + data.count)
        out.withUnsafeMutableBytes {
            IPv4Header(
                source: IPAddress(source)!, destination: IPAddress("10.0.0.2")!, protocol: .udp, payloadLength: data.count,
                identification: id, dontFragment: false, moreFragments: more, fragmentOffset: offset
            ).emit(into: $0)
        }
        out.replaceSubrange(20..., with: data)
        return out
    }

    /// A raw IPv6 fragment straight after the fixed header.
    private func fragment6(id: UInt32 = 7, offset: Int, more: Bool, data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 48)
        out.withUnsafeMutableBytes {
            IPv6Header(source: IPAddress("fd00::1")!, destination: IPAddress("fd00::2")!, nextHeader: .fragment, payloadLength: 8 + data.count)
                .emit(into: $0)
        }
        out[40] = 17
        out[42] = UInt8(offset >> 8)
        out[43] = UInt8(offset & 0xF8) | (more ? 1 : 0)
        withUnsafeBytes(of: id.bigEndian) { out.replaceSubrange(44..<48, with: $0) }
        return out + data
    }

    private func bytes(_ n: Int, _ value: UInt8 = 0xAB) -> [UInt8] { [UInt8](repeating: value, count: n) }

    // MARK: tests

    func testFixturesReassemble() {
        let r = FragmentReassembler()
        // IPv4: the first fragment's header, options included; DF was cleared by the fragmenter.
        var expected4 = Fixture.ipv4WithOptions
        expected4[6] = 0
        expected4.withUnsafeMutableBytes { b in
            b[10] = 0
            b[11] = 0
            let sum = Checksum.checksum(UnsafeRawBufferPointer(rebasing: b[0..<32]))
            b[10] = UInt8(sum >> 8)
            b[11] = UInt8(sum & 0xFF)
        }
        XCTAssertEqual(feedAll(r, [Fixture.ipv4WithOptionsFragment2, Fixture.ipv4WithOptionsFragment1]), .reassembled(expected4))
        // IPv6: the hop-by-hop header stays, the fragment header goes.
        XCTAssertEqual(
            feedAll(r, [Fixture.ipv6WithExtensionsFragment1, Fixture.ipv6WithExtensionsFragment2]), .reassembled(Fixture.ipv6WithExtensions))
        XCTAssertEqual(r.counters.reassembled, 2)
        XCTAssertEqual(r.counters.fragments, 4)
        XCTAssertEqual(r.reassemblyCount, 0)
        XCTAssertEqual(r.bufferedBytes, 0)
    }

    func testNotFragments() {
        let r = FragmentReassembler()
        var atomic = Fixture.ipv6LaterFragment
        atomic[43] = 0  // offset 0, M clear
        for packet in [Fixture.ipv4UDP, Fixture.ipv6UDP, Fixture.ipv4TCPSyn, atomic] {
            XCTAssertEqual(feed(r, packet), .unfragmented)
        }
        XCTAssertEqual(r.counters, FragmentReassembler.Counters())
    }

    func testLargestDatagramsRoundTripExactly() {
        // 65,515 bytes of UDP in 1,480-byte pieces (IPv4) or 1,448-byte ones (IPv6: 40 + 8 of headers).
        for (source, destination, payload, count) in [
            ("10.0.0.1:5000", "10.0.0.2:53", UDPPacket.maximumIPv4Payload, 45), ("[fd00::1]:5000", "[fd00::2]:53", 65_507, 46),
            ("[fd00::1]:5000", "[fd00::2]:53", UDPPacket.maximumIPv6Payload, 46),
        ] {
            let original = udp(source, destination, payload: payload)
            var pieces = split(original, mtu: 1500)
            XCTAssertEqual(pieces.count, count, "\(payload)")
            var rng = SplitMix64(seed: UInt64(payload))
            pieces.shuffle(using: &rng)
            let r = FragmentReassembler()
            XCTAssertEqual(feedAll(r, pieces), .reassembled(original), "\(payload)")
            XCTAssertEqual(r.bufferedBytes, 0)
        }
    }

    func testInOrderReverseAndShuffledWithDuplicates() {
        for original in [udp("10.0.0.1:1", "10.0.0.2:2", payload: 3000), udp("[fd00::1]:1", "[fd00::2]:2", payload: 3000)] {
            let pieces = split(original, mtu: 576)
            var rng = SplitMix64(seed: 42)
            var orders = [pieces, pieces.reversed()]
            for _ in 0..<20 { orders.append(pieces.shuffled(using: &rng)) }
            for order in orders {
                let r = FragmentReassembler()
                // Every fragment but the last twice, the copies spread around.
                var sequence = order.dropLast() + order.dropLast().shuffled(using: &rng)
                sequence.shuffle(using: &rng)
                var done: [UInt8]? = nil
                for piece in sequence + [order.last!] {
                    switch feed(r, piece) {
                    case .reassembled(let p): done = p
                    case .held: break
                    case let other: XCTFail("\(other)")
                    }
                }
                XCTAssertEqual(done, original)
                XCTAssertEqual(r.counters.duplicates, order.count - 1)
                XCTAssertEqual(r.counters.fragments, order.count)
            }
        }
    }

    func testDuplicateOfTheLastFragmentAndAfterCompletion() {
        let r = FragmentReassembler()
        let a = fragment4(offset: 0, more: true, data: bytes(16, 1)), b = fragment4(offset: 16, more: false, data: bytes(5, 2))
        XCTAssertEqual(feed(r, b), .held)
        XCTAssertEqual(feed(r, b), .held)
        XCTAssertEqual(r.counters.duplicates, 1)
        guard case .reassembled(let packet) = feed(r, a) else { return XCTFail("not reassembled") }
        XCTAssertEqual(packet.count, 20 + 21)
        XCTAssertEqual(Array(packet[20...]), bytes(16, 1) + bytes(5, 2))
        // A late duplicate starts a new datagram, which will time out.
        XCTAssertEqual(feed(r, b), .held)
        XCTAssertEqual(r.reassemblyCount, 1)
    }

    func testOverlapsDropTheDatagram() {
        // (fragments as (offset, more, length), expected drop of the last)
        let cases: [(String, [(Int, Bool, Int)])] = [
            ("partial overlap", [(0, true, 16), (8, true, 16)]),
            ("same offset, longer", [(0, true, 8), (0, true, 16)]),
            ("same offset, shorter", [(0, true, 16), (0, true, 8)]),
            ("covers two held", [(0, true, 8), (8, true, 8), (0, true, 16)]),
            ("inside one held", [(0, true, 24), (8, true, 8)]),
            ("last over a held one", [(16, true, 8), (8, false, 12)]),
            ("same start as the last, not last", [(16, false, 4), (16, true, 8)]),
        ]
        for (name, pieces) in cases {
            for v6 in [false, true] {
                let r = FragmentReassembler()
                let packets = pieces.enumerated().map { i, p in
                    v6 ? fragment6(offset: p.0, more: p.1, data: bytes(p.2, UInt8(i)))
                        : fragment4(offset: p.0, more: p.1, data: bytes(p.2, UInt8(i)))
                }
                XCTAssertEqual(feedAll(r, packets), .dropped(.overlap), name)
                XCTAssertEqual(r.counters.overlapping, 1, name)
                XCTAssertEqual(r.reassemblyCount, 0, name)
                XCTAssertEqual(r.bufferedBytes, 0, name)
            }
        }
    }

    func testInconsistentEnds() {
        let cases: [(String, [(Int, Bool, Int)])] = [
            ("two different last fragments", [(16, false, 8), (32, false, 8)]),
            ("a last fragment before held data", [(32, true, 8), (8, false, 8)]),
            ("data past the end", [(8, false, 8), (16, true, 8)]),
            ("data far past the end", [(8, false, 8), (64, true, 8)]),
        ]
        for (name, pieces) in cases {
            let r = FragmentReassembler()
            let packets = pieces.map { fragment4(offset: $0.0, more: $0.1, data: bytes($0.2)) }
            XCTAssertEqual(feedAll(r, packets), .dropped(.inconsistent), name)
            XCTAssertEqual(r.counters.inconsistent, 1, name)
            XCTAssertEqual(r.bufferedBytes, 0, name)
        }
    }

    func testLengthRules() {
        let r = FragmentReassembler()
        XCTAssertEqual(feed(r, fragment4(offset: 0, more: true, data: bytes(12))), .dropped(.badLength))
        XCTAssertEqual(feed(r, fragment4(offset: 8, more: false, data: [])), .dropped(.badLength))
        XCTAssertEqual(feed(r, fragment6(offset: 0, more: true, data: bytes(9))), .dropped(.badLength))
        XCTAssertEqual(feed(r, fragment6(offset: 8, more: false, data: [])), .dropped(.badLength))
        XCTAssertEqual(r.counters.malformed, 4)
        // The datagram may reach 65,535 bytes, not more: IPv4 counts its 20-byte header.
        XCTAssertEqual(feed(r, fragment4(offset: 65_528 - 24, more: false, data: bytes(11))), .held)  // 65,535
        XCTAssertEqual(feed(r, fragment4(id: 8, offset: 65_528 - 24, more: false, data: bytes(12))), .dropped(.tooBig))
        XCTAssertEqual(feed(r, fragment4(id: 9, offset: 65_528, more: true, data: bytes(8))), .dropped(.tooBig))
        XCTAssertEqual(feed(r, fragment6(offset: 65_528, more: false, data: bytes(7))), .held)  // payload 65,535
        XCTAssertEqual(feed(r, fragment6(id: 8, offset: 65_528, more: false, data: bytes(8))), .dropped(.tooBig))
        XCTAssertEqual(r.counters.tooBig, 3)
        XCTAssertEqual(r.reassemblyCount, 2)
    }

    func testMalformedPackets() {
        let r = FragmentReassembler()
        var badChecksum = fragment4(offset: 8, more: true, data: bytes(8))
        badChecksum[11] ^= 1
        XCTAssertEqual(feed(r, badChecksum), .dropped(.malformed(.badChecksum(.ipv4))))
        XCTAssertEqual(feed(r, []), .dropped(.malformed(.truncated(.ip))))
        XCTAssertEqual(feed(r, [0x50]), .dropped(.malformed(.badVersion(5))))
        // A first IPv6 fragment whose extension header chain is cut: refused.
        var cutChain = fragment6(offset: 0, more: true, data: [17, 4] + bytes(6))
        cutChain[40] = 60  // destination options claiming 40 bytes
        XCTAssertEqual(feed(r, cutChain), .dropped(.malformed(.truncated(.ipv6ExtensionHeader))))
        XCTAssertEqual(r.counters.malformed, 4)
        let unchecked = FragmentReassembler(limits: .init(verifyIPv4Checksum: false))
        XCTAssertEqual(feed(unchecked, badChecksum), .held)
    }

    func testEveryTruncationOfAFragmentIsRefusedWithoutTrapping() {
        for packet in [Fixture.ipv4WithOptionsFragment1, Fixture.ipv6WithExtensionsFragment1, Fixture.ipv6HopByHopFragment] {
            let r = FragmentReassembler()
            for length in 0..<packet.count {
                let got = feed(r, Array(packet[0..<length]))
                guard case .dropped = got else { return XCTFail("length \(length): \(got)") }
            }
            XCTAssertEqual(r.counters.malformed, packet.count)
            XCTAssertEqual(feed(r, packet), .held)
        }
    }

    func testKeysKeepDatagramsApart() {
        let r = FragmentReassembler()
        // Same id, different sources; and two ids from one source, interleaved.
        let a = [fragment4(id: 1, offset: 0, more: true, data: bytes(8, 1)), fragment4(id: 1, offset: 8, more: false, data: bytes(3, 2))]
        let b = [fragment4(id: 1, offset: 0, more: true, data: bytes(8, 3), source: "10.0.0.9"), fragment4(id: 1, offset: 8, more: false, data: bytes(3, 4), source: "10.0.0.9")]
        let c = [fragment4(id: 2, offset: 0, more: true, data: bytes(8, 5)), fragment4(id: 2, offset: 8, more: false, data: bytes(3, 6))]
        XCTAssertEqual(feed(r, a[0]), .held)
        XCTAssertEqual(feed(r, b[0]), .held)
        XCTAssertEqual(feed(r, c[1]), .held)
        XCTAssertEqual(r.reassemblyCount, 3)
        guard case .reassembled(let pc) = feed(r, c[0]), case .reassembled(let pa) = feed(r, a[1]), case .reassembled(let pb) = feed(r, b[1]) else {
            return XCTFail("not reassembled")
        }
        XCTAssertEqual(Array(pa[20...]), bytes(8, 1) + bytes(3, 2))
        XCTAssertEqual(Array(pb[20...]), bytes(8, 3) + bytes(3, 4))
        XCTAssertEqual(Array(pc[20...]), bytes(8, 5) + bytes(3, 6))
    }

    func testTimeout() {
        let r = FragmentReassembler(limits: .init(timeoutMilliseconds: 30_000))
        let first = fragment4(offset: 0, more: true, data: bytes(8)), last = fragment4(offset: 8, more: false, data: bytes(8))
        XCTAssertEqual(feed(r, first, now: 1_000), .held)
        r.expire(now: 30_999)
        XCTAssertEqual(r.reassemblyCount, 1)
        r.expire(now: 31_000)
        XCTAssertEqual(r.reassemblyCount, 0)
        XCTAssertEqual(r.counters.timedOut, 1)
        XCTAssertEqual(r.bufferedBytes, 0)
        // `feed` expires too: the first fragment is too old by the time the last arrives.
        XCTAssertEqual(feed(r, first, now: 40_000), .held)
        XCTAssertEqual(feed(r, last, now: 70_000), .held)
        XCTAssertEqual(r.counters.timedOut, 2)
        XCTAssertEqual(feed(r, first, now: 70_001), .reassembled(fragment4(offset: 0, more: false, data: bytes(16))))
    }

    func testEvictionByCountOldestFirst() {
        let r = FragmentReassembler(limits: .init(maximumReassemblies: 4))
        for id in 1...5 {
            XCTAssertEqual(feed(r, fragment4(id: UInt16(id), offset: 0, more: true, data: bytes(8)), now: UInt64(id)), .held)
        }
        XCTAssertEqual(r.reassemblyCount, 4)
        XCTAssertEqual(r.counters.evicted, 1)
        XCTAssertEqual(r.slots.count, 4)
        for id in 2...5 {
            guard case .reassembled = feed(r, fragment4(id: UInt16(id), offset: 8, more: false, data: bytes(1)), now: 10) else {
                return XCTFail("datagram \(id) was not kept")
            }
        }
        XCTAssertEqual(feed(r, fragment4(id: 1, offset: 8, more: false, data: bytes(1)), now: 10), .held, "datagram 1 was evicted")
    }

    func testEvictionByBytesOldestFirst() {
        let r = FragmentReassembler(limits: .init(maximumBufferedBytes: 100))
        XCTAssertEqual(feed(r, fragment4(id: 1, offset: 0, more: true, data: bytes(48))), .held)
        XCTAssertEqual(feed(r, fragment4(id: 2, offset: 0, more: true, data: bytes(48))), .held)
        XCTAssertEqual(r.bufferedBytes, 96)
        XCTAssertEqual(feed(r, fragment4(id: 3, offset: 0, more: true, data: bytes(48))), .held)
        XCTAssertEqual(r.counters.evicted, 1)
        XCTAssertEqual(r.bufferedBytes, 96)
        // Datagram 2 grows past the budget: the oldest datagram other than 2 goes, and with 1 already
        // gone that is 3.
        XCTAssertEqual(feed(r, fragment4(id: 2, offset: 48, more: true, data: bytes(8))), .held)
        XCTAssertEqual(r.counters.evicted, 2)
        XCTAssertEqual(r.bufferedBytes, 56)
        // A datagram that alone outgrows the budget is dropped.
        XCTAssertEqual(feed(r, fragment4(id: 2, offset: 56, more: true, data: bytes(48))), .dropped(.overBudget))
        XCTAssertEqual(feed(r, fragment4(id: 4, offset: 0, more: true, data: bytes(104))), .dropped(.overBudget))
        XCTAssertEqual(r.counters.overBudget, 2)
        XCTAssertEqual(r.bufferedBytes, 0)
        XCTAssertEqual(r.reassemblyCount, 0)
    }

    /// Random fragments of a few datagrams, mutated and mixed with junk: never a trap, limits always
    /// held, and whatever comes out is a valid unfragmented packet.
    func testHostileSequencesKeepTheLimits() {
        var rng = SplitMix64(seed: 7)
        let limits = FragmentReassembler.Limits(maximumReassemblies: 8, maximumBufferedBytes: 20_000, timeoutMilliseconds: 500)
        let r = FragmentReassembler(limits: limits)
        var pool: [[UInt8]] = []
        for i in 0..<12 {
            let v6 = i % 2 == 0
            let packet = udp(v6 ? "[fd00::1]:1" : "10.0.0.1:1", v6 ? "[fd00::2]:2" : "10.0.0.2:2", payload: Int.random(in: 0..<9000, using: &rng), identification: UInt16(i), seed: i)
            pool += split(packet, mtu: Int.random(in: 1280...1500, using: &rng), identification: UInt32(i))
        }
        var now: UInt64 = 0
        for _ in 0..<20_000 {
            var packet = pool.randomElement(using: &rng)!
            if Int.random(in: 0..<4, using: &rng) == 0 {
                packet[Int.random(in: 0..<min(packet.count, 64), using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            now += UInt64.random(in: 0..<5, using: &rng)
            let got = feed(r, packet, now: now)
            if case .reassembled(let p) = got {
                p.withUnsafeBytes { b in
                    if p[0] >> 4 == 4 {
                        let ip = try? IPv4Packet(validating: b)
                        XCTAssertEqual(ip?.bytes.count, p.count)
                        XCTAssertEqual(ip?.isFragment, false)
                        XCTAssertEqual(ip?.verifyChecksum(), true)
                    } else {
                        let ip = try? IPv6Packet(validating: b)
                        XCTAssertEqual(ip?.bytes.count, p.count)
                        XCTAssertNil(ip?.fragment)
                    }
                }
            }
            XCTAssertLessThanOrEqual(r.bufferedBytes, limits.maximumBufferedBytes)
            XCTAssertLessThanOrEqual(r.reassemblyCount, limits.maximumReassemblies)
        }
        XCTAssertGreaterThan(r.counters.reassembled, 0)
    }
}
