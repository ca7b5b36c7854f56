import Glibc
import SluiceIO
import SluiceLoop
import SluiceWire
import XCTest

@testable import SluiceRelay

/// The socket a worker's next UDP association takes is made after the turn that took the last one
/// has sent its output, registered already, and handed over without a system call.
final class UDPSocketReserveTests: XCTestCase {
    func testTheNextSocketIsMadeAfterTheTurnAndItsHandlerHearsItsDatagrams() throws {
        let loop = try EventLoop()
        let reserve = UDPSocketReserve(loop: loop)
        defer { reserve.close() }
        XCTAssertNil(reserve.readyDescriptor, "nothing is made before the first association")
        let first = try reserve.take { _ in }
        defer { first.socket.close() }
        XCTAssertNil(reserve.readyDescriptor, "the next socket waits for the turn's output")
        runOneTurn(loop)
        let ready = try XCTUnwrap(reserve.readyDescriptor, "made once the turn's output went")

        var heard = 0
        let second = try reserve.take { _ in
            heard += 1
            loop.stop()
        }
        defer {
            loop.forgetBeforeClose(fd: second.socket.fd)
            second.socket.close()
        }
        XCTAssertEqual(second.socket.fd, ready, "the socket made ahead is the one taken")

        // A peer on loopback answers the taken socket's first datagram; the taker's handler hears it.
        let (peer, endpoint) = loopbackUDPSocket()
        defer { close(peer) }
        let sent = try [UInt8]("ask".utf8).withUnsafeBytes { try second.socket.send(datagram: $0, to: endpoint, dualStack: second.dualStack) }
        guard case .done(3) = sent else { return XCTFail("the taken socket sent \(sent)") }
        var readable = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&readable, 1, 2_000), 1, "the peer got the taken socket's datagram")
        var buffer = [UInt8](repeating: 0, count: 16)
        var source = sockaddr_storage()
        var sourceLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &source) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(peer, &buffer, buffer.count, 0, $0, &sourceLength) }
        }
        XCTAssertEqual(got, 3)
        let answered = withUnsafePointer(to: &source) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(peer, "answer", 6, 0, $0, sourceLength) }
        }
        XCTAssertEqual(answered, 6)
        _ = loop.schedule(afterMilliseconds: 2_000) { loop.stop() }
        loop.run()
        XCTAssertEqual(heard, 1, "the handler given at take heard the answer")
    }

    func testCloseClosesTheSocketMadeAheadAndMakesNoMore() throws {
        let loop = try EventLoop()
        let reserve = UDPSocketReserve(loop: loop)
        let first = try reserve.take { _ in }
        defer { first.socket.close() }
        runOneTurn(loop)
        let ready = try XCTUnwrap(reserve.readyDescriptor)
        reserve.close()
        XCTAssertEqual(fcntl(ready, F_GETFD), -1, "the socket made ahead is closed")
        XCTAssertEqual(errno, EBADF)

        let late = try reserve.take { _ in }
        defer { late.socket.close() }
        runOneTurn(loop)
        XCTAssertNil(reserve.readyDescriptor, "a closed reserve makes none ahead")
    }
}
