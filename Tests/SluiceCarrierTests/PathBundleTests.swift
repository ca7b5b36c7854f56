import SluiceLoop
import SluiceMux
import SluiceTestSupport
import SluiceWire
import XCTest

@testable import SluiceCarrier

/// A turn's datagrams gathered into one path packet's plaintext (`PathBundle`): a lone one as a
/// plain DATAGRAM, several as a BUNDLE, never more than the path's largest packet holds.
final class PathBundleTests: XCTestCase {
    private let dns = SocketEndpoint("8.8.8.8:53")!
    private let web = SocketEndpoint("[2001:db8::1]:443")!
    private var loop: EventLoop!

    override func setUpWithError() throws { loop = try EventLoop() }
    override func tearDown() { loop = nil }

    private func take(_ bundle: PathBundle) -> [UInt8]? {
        var room = [UInt8](repeating: 0xEE, count: 256)
        return room.withUnsafeMutableBytes { bundle.take(into: $0) }.map { Array(room[0..<$0]) }
    }

    private func append(_ bundle: PathBundle, stream: UInt32, to endpoint: SocketEndpoint, _ data: [UInt8]) {
        XCTAssertTrue(data.withUnsafeBytes { bundle.append(stream: stream, endpoint: endpoint, payload: $0) })
    }

    func testALoneDatagramIsAPlainDatagram() {
        let bundle = PathBundle(loop: loop)
        XCTAssertTrue(bundle.isEmpty)
        XCTAssertNil(take(bundle), "nothing held, no packet")
        append(bundle, stream: 3, to: dns, Array("hi".utf8))
        XCTAssertEqual(bundle.kind, PathHeader.Kind.datagram)
        XCTAssertEqual(bundle.plaintextLength, 13)
        XCTAssertEqual(take(bundle), hex("00000003 01 08080808 0035 6869"), "byte for byte what an end without bundles sends")
        XCTAssertTrue(bundle.isEmpty, "taking empties it")
    }

    func testSeveralAreABundleInTheOrderTheyCame() {
        let bundle = PathBundle(loop: loop)
        append(bundle, stream: 3, to: dns, Array("hi".utf8))
        append(bundle, stream: 5, to: web, [])
        XCTAssertEqual(bundle.count, 2)
        XCTAssertEqual(bundle.kind, PathHeader.Kind.bundle)
        XCTAssertEqual(bundle.plaintextLength, 2 + 13 + 2 + 23)
        XCTAssertEqual(take(bundle), hex("000d 00000003 01 08080808 0035 6869 0017 00000005 04 20010db8000000000000000000000001 01bb"))
        append(bundle, stream: 7, to: dns, [1])
        XCTAssertEqual(take(bundle), hex("00000007 01 08080808 0035 01"), "the next turn starts afresh")
    }

    /// `fits` keeps a packet within `maxPacket`: header, plaintext and tag.
    func testFitsKeepsThePacketWithinTheLargestThePathCarries() {
        let bundle = PathBundle(loop: loop)
        let maxPacket = PathHeader.length + 50 + PathHeader.tagLength
        XCTAssertTrue(bundle.fits(datagramLength: 50, maxPacket: maxPacket), "alone it needs no entry length")
        XCTAssertFalse(bundle.fits(datagramLength: 51, maxPacket: maxPacket))
        append(bundle, stream: 3, to: dns, [UInt8](repeating: 1, count: 9))  // 20 bytes of plaintext, 22 as an entry
        XCTAssertTrue(bundle.fits(datagramLength: 26, maxPacket: maxPacket), "22 + 2 + 26 = 50")
        XCTAssertFalse(bundle.fits(datagramLength: 27, maxPacket: maxPacket))
        append(bundle, stream: 5, to: dns, [UInt8](repeating: 2, count: 15))  // 26 bytes
        XCTAssertEqual(PathHeader.length + bundle.plaintextLength + PathHeader.tagLength, maxPacket)
        XCTAssertTrue(bundle.fits(datagramLength: 11, maxPacket: 65_535), "a larger path takes more")
    }

    func testWhatWasTakenDecodesAsItsKind() throws {
        let bundle = PathBundle(loop: loop)
        for i in 1...5 { append(bundle, stream: UInt32(2 * i + 1), to: i % 2 == 0 ? dns : web, [UInt8](repeating: UInt8(i), count: i * 3)) }
        let kind = bundle.kind
        let bytes = try XCTUnwrap(take(bundle))
        let streams = try bytes.withUnsafeBytes { plaintext throws -> [UInt32] in
            guard case .bundle(let entries) = try PathMessage.decode(kind, plaintext) else { return [] }
            return entries.map(\.stream)
        }
        XCTAssertEqual(streams, [3, 5, 7, 9, 11])
    }

    func testRemoveAllDropsWhatIsHeld() {
        let bundle = PathBundle(loop: loop)
        append(bundle, stream: 3, to: dns, [1, 2])
        bundle.removeAll()
        XCTAssertTrue(bundle.isEmpty)
        XCTAssertNil(take(bundle))
    }

    /// Records what `add` asks to be sealed, each as the packet's kind and plaintext.
    private final class Sealer: PathBundleSealer {
        var packets: [(PathHeader.Kind, [UInt8])] = []
        func seal(_ bundle: PathBundle) {
            guard !bundle.isEmpty else { return }
            let kind = bundle.kind
            var room = [UInt8](repeating: 0, count: 65_535)
            let n = room.withUnsafeMutableBytes { bundle.take(into: $0) }!
            packets.append((kind, Array(room[0..<n])))
        }
    }

    /// `add` gathers a turn's datagrams, seals early only what the next would overflow, and
    /// seals the rest at the end of the turn, once however many came.
    func testAddSealsWhenFullAndAtTheEndOfTheTurn() {
        let bundle = PathBundle(loop: loop)
        let sealer = Sealer()
        let maxPacket = PathHeader.length + 2 * (2 + 11 + 20) + PathHeader.tagLength  // two 20-byte datagrams
        for i in 0..<3 {
            [UInt8](repeating: UInt8(i), count: 20).withUnsafeBytes {
                bundle.add(stream: UInt32(2 * i + 1), endpoint: dns, payload: $0, maxPacket: maxPacket, sealer: sealer)
            }
        }
        XCTAssertEqual(sealer.packets.map(\.0), [.bundle], "the third did not fit beside the first two")
        XCTAssertEqual(bundle.count, 1)
        loop.afterTurn { [loop] in loop!.stop() }
        loop.run()
        XCTAssertEqual(sealer.packets.map(\.0), [.bundle, .datagram], "the end of the turn sealed the third, alone")
        XCTAssertTrue(bundle.isEmpty)
        XCTAssertEqual(sealer.packets[1].1, hex("00000005 01 08080808 0035") + [UInt8](repeating: 2, count: 20))
    }
}
