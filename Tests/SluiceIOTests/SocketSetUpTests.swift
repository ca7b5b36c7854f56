import Glibc
import SluiceIO
import SluiceSystem
import SluiceWire
import XCTest

/// `Socket.closingOnFailure`: the one way every socket constructor and owner finishes setting a new
/// socket up, so that a socket whose set-up failed half-way is never leaked.
final class SocketSetUpTests: XCTestCase {
    private let loopback = IPAddress("127.0.0.1")!

    func testFailedSetUpClosesTheSocketAndRethrows() throws {
        let socket = try Socket.udp(for: loopback)
        XCTAssertNotEqual(fcntl(socket.fd, F_GETFD), -1, "a new socket is open")
        XCTAssertThrowsError(try socket.closingOnFailure { () throws(SystemError) in
            throw SystemError("set-up", code: EPERM)
        }) { error in
            XCTAssertEqual(error as? SystemError, SystemError("set-up", code: EPERM), "the set-up's own error comes out")
        }
        let result = fcntl(socket.fd, F_GETFD), code = errno
        XCTAssertEqual(result, -1, "the socket is closed")
        XCTAssertEqual(code, EBADF)
    }

    func testSuccessfulSetUpKeepsTheSocketAndReturnsItsValue() throws {
        let socket = try Socket.udp(for: loopback)
        defer { socket.close() }
        let bound = try socket.closingOnFailure { () throws(SystemError) in
            try socket.bind(to: SocketEndpoint(address: loopback, port: 0))
            return try socket.localEndpoint()
        }
        XCTAssertNotEqual(bound.port, 0)
        XCTAssertNotEqual(fcntl(socket.fd, F_GETFD), -1, "the socket stays open")
    }
}
