import Glibc
import SluiceSystem
import SluiceWire
import XCTest

@testable import SluiceIO

/// Bursts of datagrams with recvmmsg, over UDP on loopback.
final class DatagramReceiverTests: XCTestCase {
    private let sockets = TestSockets()

    override func tearDown() { sockets.closeAll() }

    func testReadsABurstPerCallWithEachSourceUntilTheSocketIsEmpty() throws {
        let (receiving, to) = try sockets.bound()
        let (sending, from) = try sockets.bound()
        for i in 0..<5 {
            let payload = [UInt8](repeating: UInt8(i), count: i + 1)
            _ = try payload.withUnsafeBytes { try sending.send(datagram: $0, to: to, dualStack: false) }
        }
        let receiver = DatagramReceiver(slots: 4)
        XCTAssertEqual(try receiver.receive(from: receiving), .done(4), "a full burst: there may be more")
        for i in 0..<4 {
            XCTAssertEqual(Array(receiver.packet(i)), [UInt8](repeating: UInt8(i), count: i + 1))
            XCTAssertEqual(receiver.source(i), from)
            XCTAssertFalse(receiver.truncated(i))
        }
        XCTAssertEqual(try receiver.receive(from: receiving), .done(1), "a short burst: the socket is empty")
        XCTAssertEqual(Array(receiver.packet(0)), [4, 4, 4, 4, 4])
        XCTAssertEqual(try receiver.receive(from: receiving), .wouldBlock)
    }

    func testTheLargestDatagramFitsItsSlot() throws {
        let (receiving, to) = try sockets.bound()
        let (sending, _) = try sockets.bound()
        let big = [UInt8](repeating: 0xEE, count: 65_507)  // the largest UDP payload over IPv4
        try sending.setOption(SOL_SOCKET, SO_SNDBUF, 1 << 20, "SO_SNDBUF")
        try receiving.setOption(SOL_SOCKET, SO_RCVBUF, 1 << 20, "SO_RCVBUF")
        _ = try big.withUnsafeBytes { try sending.send(datagram: $0, to: to, dualStack: false) }
        let receiver = DatagramReceiver(slots: 2)
        XCTAssertEqual(try receiver.receive(from: receiving), .done(1))
        XCTAssertEqual(receiver.packet(0).count, big.count)
        XCTAssertFalse(receiver.truncated(0))
    }

    /// The receiver's message headers are made once and reused: what the kernel wrote into them in
    /// one call (no control message for a plain datagram, a source's length) must not limit the
    /// next. On a coalescing socket a plain datagram, then a GSO send of four, then a plain one again:
    /// the four are told apart by the control message the second call must still have room for.
    func testHeadersReusedAcrossCallsStillCarryEachCallsSourceAndSegments() throws {
        let (receiving, to) = try sockets.bound()
        XCTAssertTrue(DatagramReceiver.enableCoalescing(on: receiving), "UDP_GRO (Linux 5.0+)")
        let (plain, plainSource) = try sockets.bound()
        let (segmenting, segmentingSource) = try sockets.bound()
        var size: Int32 = 100
        // UDP_SEGMENT (udp(7), linux/udp.h: 103), which Swift's Glibc module does not name.
        XCTAssertEqual(setsockopt(segmenting.fd, Int32(IPPROTO_UDP), 103, &size, socklen_t(MemoryLayout<Int32>.size)), 0)
        let receiver = DatagramReceiver(slots: 4)
        for round in 0..<2 {
            _ = try [UInt8](repeating: 7, count: 30).withUnsafeBytes { try plain.send(datagram: $0, to: to, dualStack: false) }
            XCTAssertEqual(try receiver.receive(from: receiving), .done(1), "round \(round): the plain datagram")
            XCTAssertEqual(receiver.packet(0).count, 30)
            XCTAssertEqual(receiver.source(0), plainSource)

            let four = (0..<4).flatMap { [UInt8](repeating: UInt8($0), count: 100) }
            _ = try four.withUnsafeBytes { try segmenting.send(datagram: $0, to: to, dualStack: false) }
            XCTAssertEqual(try receiver.receive(from: receiving), .done(4), "round \(round): one GSO send of four, told apart")
            for i in 0..<4 {
                XCTAssertEqual(Array(receiver.packet(i)), [UInt8](repeating: UInt8(i), count: 100))
                XCTAssertEqual(receiver.source(i), segmentingSource)
            }
        }
        XCTAssertEqual(try receiver.receive(from: receiving), .wouldBlock)
    }

    func testAnICMPErrorOnAConnectedSocketThrows() throws {
        // A port nobody listens on: bind one, note it, close it.
        let (probe, closedPort) = try sockets.bound()
        sockets.close(probe)
        let s = try sockets.unbound()
        try s.connect(to: closedPort)
        _ = try [UInt8]([1]).withUnsafeBytes { try s.write($0) }
        let receiver = DatagramReceiver(slots: 4)
        XCTAssertThrowsError(try receiver.receive(from: s)) { error in
            XCTAssertEqual((error as? SystemError)?.code, ECONNREFUSED)
        }
        XCTAssertEqual(try receiver.receive(from: s), .wouldBlock, "the error was reported once")
    }
}
