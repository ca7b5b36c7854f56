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
