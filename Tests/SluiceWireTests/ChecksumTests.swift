import SluiceTestSupport
import XCTest

@testable import SluiceWire

final class ChecksumTests: XCTestCase {
    /// The plain RFC 1071 loop: big-endian 16-bit words, odd byte padded, folded at the end.
    private func referenceSum(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var sum: UInt64 = 0
        var i = bytes.startIndex
        while i + 1 < bytes.endIndex {
            sum += UInt64(bytes[i]) << 8 | UInt64(bytes[i + 1])
            i += 2
        }
        if i < bytes.endIndex { sum += UInt64(bytes[i]) << 8 }
        while sum > 0xFFFF { sum = (sum >> 16) + (sum & 0xFFFF) }
        return UInt16(sum)
    }

    func testRFC1071Example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
        hex("0001f203f4f5f6f7").withUnsafeBytes { XCTAssertEqual(Checksum.sum($0), 0xDDF2) }
    }

    func testEmptyAndSmall() {
        [UInt8]().withUnsafeBytes { XCTAssertEqual(Checksum.sum($0), 0) }
        XCTAssertEqual(Checksum.sum(UnsafeRawBufferPointer(start: nil, count: 0)), 0)
        ([0xAB] as [UInt8]).withUnsafeBytes { XCTAssertEqual(Checksum.sum($0), 0xAB00) }
        ([0xAB, 0xCD, 0xEF] as [UInt8]).withUnsafeBytes { XCTAssertEqual(Checksum.sum($0), 0x9ACE) }  // 0xABCD + 0xEF00, folded
    }

    func testMatchesReferenceOverRandomLengthsAndAlignments() {
        var rng = SplitMix64(seed: 1071)
        let storage = (0..<4200).map { _ in UInt8.random(in: 0...255, using: &rng) }
        storage.withUnsafeBytes { all in
            for length in Array(0...300) + [1499, 1500, 1501, 4095, 4096, 4097] {
                for start in 0..<8 {
                    let slice = storage[start..<start + length]
                    let buffer = UnsafeRawBufferPointer(rebasing: all[start..<start + length])
                    XCTAssertEqual(Checksum.sum(buffer), referenceSum(slice), "length \(length) start \(start)")
                }
            }
        }
    }

    func testCarriesWithAllOnesAndNearlyAllOnes() {
        // All-0xFF words stress the 64-bit carry path hardest.
        for length in [8, 31, 32, 33, 64, 65_535, 200_001] {
            var bytes = [UInt8](repeating: 0xFF, count: length)
            bytes.withUnsafeBytes { XCTAssertEqual(Checksum.sum($0), referenceSum(bytes[...]), "length \(length)") }
            bytes[length / 2] = 0xFE
            bytes.withUnsafeBytes { XCTAssertEqual(Checksum.sum($0), referenceSum(bytes[...]), "length \(length)") }
        }
    }

    func testFoldAndAdd() {
        XCTAssertEqual(Checksum.fold(0), 0)
        XCTAssertEqual(Checksum.fold(0xFFFF), 0xFFFF)
        XCTAssertEqual(Checksum.fold(0x1_0000), 1)
        XCTAssertEqual(Checksum.fold(0x1_FFFE), 0xFFFF)
        XCTAssertEqual(Checksum.fold(UInt64.max), 0xFFFF)
        XCTAssertEqual(Checksum.fold(0x0001_0002_0003_0004), 10)
        XCTAssertEqual(Checksum.add(0xFFFF, 1), 1)
        XCTAssertEqual(Checksum.add(0x8000, 0x8000), 1)
        XCTAssertEqual(Checksum.add(0x1234, 0x0001), 0x1235)
        XCTAssertEqual(Checksum.complement(0x1234), 0xEDCB)
    }

    func testPseudoHeaderSumMatchesItsBytes() {
        let cases: [(String, String, IPProtocol, Int)] = [
            ("10.0.0.2", "93.184.216.34", .tcp, 40),
            ("255.255.255.255", "255.255.255.254", .udp, 65_535),
            ("fd00::2", "2001:db8::1", .tcp, 28),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::", .udp, 70_000),
        ]
        for (s, d, proto, length) in cases {
            let source = IPAddress(s)!, destination = IPAddress(d)!
            var bytes = source.bytes + destination.bytes
            if source.isIPv4 {
                bytes += [0, proto.rawValue, UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            } else {
                bytes += withUnsafeBytes(of: UInt32(length).bigEndian) { Array($0) } + [0, 0, 0, proto.rawValue]
            }
            XCTAssertEqual(
                Checksum.pseudoHeaderSum(source: source, destination: destination, protocol: proto, length: length),
                referenceSum(bytes[...]), "\(s) \(d)")
        }
    }

    func testIncrementalUpdateMatchesRecompute() {
        var rng = SplitMix64(seed: 1624)
        for _ in 0..<500 {
            var bytes = (0..<40).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let before = Checksum.complement(referenceSum(bytes[...]))
            // One 16-bit word.
            let at = Int.random(in: 0..<20, using: &rng) * 2
            let old16 = UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
            let new16 = UInt16.random(in: 0...0xFFFF, using: &rng)
            bytes[at] = UInt8(new16 >> 8)
            bytes[at + 1] = UInt8(new16 & 0xFF)
            let after16 = Checksum.complement(referenceSum(bytes[...]))
            XCTAssertTrue(
                equivalent(Checksum.update(before, old: old16, new: new16), after16), "16-bit update at \(at)")
            // A 32-bit field, then an IPv4 address in the same place.
            let at32 = Int.random(in: 0..<10, using: &rng) * 4
            let old32 = bytes[at32..<at32 + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let new32 = UInt32.random(in: 0...UInt32.max, using: &rng)
            for k in 0..<4 { bytes[at32 + k] = UInt8(new32 >> (24 - 8 * k) & 0xFF) }
            let after32 = Checksum.complement(referenceSum(bytes[...]))
            XCTAssertTrue(equivalent(Checksum.update(after16, old: old32, new: new32), after32))
            XCTAssertTrue(equivalent(Checksum.update(after16, old: IPAddress.v4(old32), new: .v4(new32)), after32))
        }
    }

    func testIncrementalUpdateOfIPv6Address() {
        var bytes = IPAddress("2001:db8::1")!.bytes + [1, 2, 3, 4]
        let before = Checksum.complement(referenceSum(bytes[...]))
        let new = IPAddress("fd00:1234:5678:9abc:def0:1:2:3")!
        bytes.replaceSubrange(0..<16, with: new.bytes)
        let after = Checksum.complement(referenceSum(bytes[...]))
        XCTAssertTrue(equivalent(Checksum.update(before, old: IPAddress("2001:db8::1")!, new: new), after))
    }

    /// 0x0000 and 0xFFFF are both ones'-complement zero; RFC 1624 allows either after an update.
    private func equivalent(_ a: UInt16, _ b: UInt16) -> Bool {
        a == b || (a == 0 && b == 0xFFFF) || (a == 0xFFFF && b == 0)
    }
}
