import SluiceStack
import SluiceWire
import SluiceTestSupport
import XCTest

/// Packets the stack must drop, counted, without crashing or calling anyone.
final class TCPStackInputTests: StackTestCase {
    func testPacketsToLoopbackAreDropped() throws {
        for (application, destination) in [("10.0.0.2:\(freshPort())", "127.0.0.1:80"), ("[fd00::2]:\(freshPort())", "[::1]:80")] {
            var app = Application(from: application, to: destination)
            harness.input(app.syn())
        }
        XCTAssertEqual(stack.counters.droppedLoopback, 2)
        XCTAssertEqual(delegate.syns, [])
        XCTAssertEqual(tun.take(), [])
        XCTAssertEqual(stack.counters.packetsIn, 2)
    }

    func testMalformedPacketsAreCountedAndIgnored() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        let syn = app.syn()
        var app6 = Application(from: "[fd00::2]:\(freshPort())", to: "[2001:db8::7]:443")
        let syn6 = app6.syn()

        /// A changed copy; an IPv4 header checksum is recomputed unless `keepChecksum`.
        func edit(_ packet: [UInt8], keepChecksum: Bool = false, _ change: (inout [UInt8]) -> Void) -> [UInt8] {
            var copy = packet
            change(&copy)
            if !keepChecksum && copy.count >= 20 && copy[0] >> 4 == 4 {
                copy[10] = 0
                copy[11] = 0
                let sum = copy.withUnsafeBytes { Checksum.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<20])) }
                copy[10] = UInt8(sum >> 8)
                copy[11] = UInt8(sum & 0xFF)
            }
            return copy
        }
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("one byte", [0x45]),
            ("truncated IPv4 header", Array(syn[0..<12])),
            ("truncated TCP header", edit(Array(syn[0..<30])) { $0[3] = 30 }),
            ("IPv4 total length past the buffer", Array(syn[0..<(syn.count - 4)])),
            ("bad IPv4 header checksum", edit(syn, keepChecksum: true) { $0[10] ^= 0xFF }),
            ("version 5", edit(syn) { $0[0] = 0x55 }),
            ("version 0", edit(syn) { $0[0] = 0x05 }),
            ("IHL below 5", edit(syn) { $0[0] = 0x44 }),
            ("TCP data offset past the segment", edit(syn) { $0[20 + 12] = 0xF0 }),
            ("truncated IPv6 header", Array(syn6[0..<39])),
            ("IPv6 payload length past the buffer", Array(syn6[0..<(syn6.count - 1)])),
            ("TCP data offset below 5", edit(syn6) { $0[40 + 12] = 0x40 }),
        ]
        var dropped = stack.counters.droppedMalformed
        for (name, packet) in cases {
            harness.input(packet)
            XCTAssertEqual(stack.counters.droppedMalformed, dropped + 1, name)
            dropped = stack.counters.droppedMalformed
        }
        XCTAssertEqual(delegate.syns, [])
        XCTAssertEqual(tun.take(), [])
        XCTAssertEqual(stack.counters.packetsIn, cases.count)
    }

    func testNonTCPPacketsAreUnsupported() throws {
        let source = SocketEndpoint("10.0.0.2:5353")!, destination = SocketEndpoint("198.51.100.53:53")!
        var udp = [UInt8](repeating: 0, count: IPv4Header.length + UDPHeader.length + 4)
        udp.withUnsafeMutableBytes { buffer in
            IPv4Header(source: source.address, destination: destination.address, protocol: .udp, payloadLength: 12)
                .emit(into: buffer)
            UDPHeader(sourcePort: source.port, destinationPort: destination.port)
                .emit(into: UnsafeMutableRawBufferPointer(rebasing: buffer[20...]), source: source.address, destination: destination.address)
        }
        var icmp = [UInt8](repeating: 0, count: IPv4Header.length + 8)
        icmp.withUnsafeMutableBytes { buffer in
            IPv4Header(source: source.address, destination: destination.address, protocol: .icmp, payloadLength: 8)
                .emit(into: buffer)
        }
        harness.input(udp)
        harness.input(icmp)
        XCTAssertEqual(stack.counters.droppedUnsupported, 2)
        XCTAssertEqual(stack.counters.droppedMalformed, 0)
        XCTAssertEqual(tun.take(), [])
    }

    func testFragmentsAreDroppedNotHeld() throws {
        let source = SocketEndpoint("10.0.0.2:\(freshPort())")!, destination = SocketEndpoint("203.0.113.7:443")!
        var fragment = tcpPacket(from: source, to: destination, seq: 1, flags: .syn, mss: 1460)
        fragment.withUnsafeMutableBytes { buffer in
            IPv4Header(
                source: source.address, destination: destination.address, protocol: .tcp, payloadLength: buffer.count - 20,
                dontFragment: false, moreFragments: true
            ).emit(into: buffer)
        }
        harness.input(fragment)
        XCTAssertEqual(stack.counters.droppedMalformed + stack.counters.droppedUnsupported, 1)
        XCTAssertEqual(delegate.syns, [])
        XCTAssertEqual(tun.take(), [])
    }

    /// Every truncation and many single-byte corruptions of real segments, IPv4 and IPv6, with and
    /// without a live flow: whatever the stack drops or passes to lwIP, it must not crash.
    func testCorruptedPacketsNeverCrash() throws {
        var app = Application(from: "10.0.0.2:\(freshPort())", to: "203.0.113.7:443")
        _ = try harness.connect(&app)
        var app6 = Application(from: "[fd00::2]:\(freshPort())", to: "[2001:db8::7]:443")
        let samples = [app.data(Array("hello world".utf8)), app.segment([.fin, .ack]), app6.syn(), app6.segment(.ack)]
        var rng = SplitMix64(seed: 0x5EED)
        var fed = stack.counters.packetsIn
        for sample in samples {
            for length in 0..<sample.count {
                harness.input(Array(sample[0..<length]))
                fed += 1
            }
            for _ in 0..<300 {
                var copy = sample
                let index = Int.random(in: 0..<copy.count, using: &rng)
                copy[index] = UInt8.random(in: 0...255, using: &rng)
                harness.input(copy)
                fed += 1
                stack.flushOutput()
            }
        }
        XCTAssertEqual(stack.counters.packetsIn, fed)
        for packet in tun.take() {
            XCTAssertNoThrow(try Segment(parsing: packet), "whatever the stack emits is well formed")
        }
    }
}

