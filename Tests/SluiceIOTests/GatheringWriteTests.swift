import Glibc
import SluiceIO
import SluiceSystem
import XCTest

/// `Socket.write(gathering:)`: spans go out in order as one write of their concatenation, and a
/// socket that takes only part says how much, wherever that ends.
final class GatheringWriteTests: XCTestCase {
    /// A connected Unix stream pair, non-blocking, closed at the end of the test.
    private func streamPair() throws -> (Socket, Socket) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0 else {
            throw SystemError("socketpair")
        }
        let pair = (Socket(fd: fds[0]), Socket(fd: fds[1]))
        addTeardownBlock {
            pair.0.close()
            pair.1.close()
        }
        return pair
    }

    /// Everything the socket holds now.
    private func drain(_ socket: Socket) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while case .done(let n) = try buffer.withUnsafeMutableBytes({ try socket.read(into: $0) }), n > 0 {
            out += buffer[0..<n]
        }
        return out
    }

    func testSpansArriveInOrderAsOneStream() throws {
        let (a, b) = try streamPair()
        let parts: [[UInt8]] = [Array("first ".utf8), Array("second ".utf8), [], Array("third".utf8)]
        let result = try withSpans(parts) { try a.write(gathering: $0) }
        XCTAssertEqual(result, .done(parts.joined().count))
        XCTAssertEqual(try drain(b), Array(parts.joined()))
    }

    func testAFullSocketTakesAPrefixThatMayEndInsideASpan() throws {
        let (a, b) = try streamPair()
        let parts = (0..<8).map { i in [UInt8](repeating: UInt8(i), count: 100_000) }
        let all = Array(parts.joined())
        guard case .done(let taken) = try withSpans(parts, { try a.write(gathering: $0) }) else {
            return XCTFail("an empty socket takes something")
        }
        XCTAssertGreaterThan(taken, 0)
        XCTAssertLessThan(taken, all.count, "800,000 bytes do not fit a Unix socket's buffer")
        XCTAssertEqual(try withSpans(parts) { try a.write(gathering: $0) }, .wouldBlock, "a full socket says so")
        XCTAssertEqual(try drain(b), Array(all[0..<taken]), "what it took is the stream's first bytes")
    }

    private func withSpans<R>(_ parts: [[UInt8]], _ body: ([UnsafeRawBufferPointer]) throws -> R) rethrows -> R {
        let buffers = parts.map { bytes -> UnsafeMutableRawBufferPointer in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
            bytes.withUnsafeBytes { b.copyMemory(from: $0) }
            return b
        }
        defer { buffers.forEach { $0.deallocate() } }
        return try body(buffers.map { UnsafeRawBufferPointer($0) })
    }
}
