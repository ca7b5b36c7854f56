import SluiceLoop
import SluiceWire
import XCTest

@testable import SluiceRelay

/// The relay's per-turn batch of datagrams to destinations.
final class DatagramBatchTests: XCTestCase {
    private final class Recorder: DatagramSender {
        var sent: [([UInt8], SocketEndpoint)] = []
        func send(_ payload: UnsafeRawBufferPointer, to endpoint: SocketEndpoint) { sent.append((Array(payload), endpoint)) }
    }

    private let a = SocketEndpoint(address: IPAddress("192.0.2.1")!, port: 53)
    private let b = SocketEndpoint(address: IPAddress("2001:db8::1")!, port: 443)

    private func bytes(_ values: [UInt8]) -> [UInt8] { values }

    /// Runs one turn of `loop`: what was deferred to its end runs, then `run()` returns.
    private func runOneTurn(_ loop: EventLoop) {
        loop.afterTurn { loop.stop() }
        loop.run()
    }

    func testHoldsDatagramsUntilTheEndOfTheTurnThenSendsThemInOrder() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let first = Recorder(), second = Recorder()
        bytes([1, 2, 3]).withUnsafeBytes { batch.append($0, from: first, to: a) }
        bytes([9]).withUnsafeBytes { batch.append($0, from: second, to: b) }
        bytes([4, 5]).withUnsafeBytes { batch.append($0, from: first, to: b) }
        XCTAssertTrue(first.sent.isEmpty && second.sent.isEmpty, "nothing goes before the turn ends")

        runOneTurn(loop)
        XCTAssertEqual(first.sent.map(\.0), [[1, 2, 3], [4, 5]])
        XCTAssertEqual(first.sent.map(\.1), [a, b])
        XCTAssertEqual(second.sent.map(\.0), [[9]])
        XCTAssertEqual(second.sent.map(\.1), [b])

        // The next turn starts empty and schedules its own flush.
        bytes([7]).withUnsafeBytes { batch.append($0, from: second, to: a) }
        runOneTurn(loop)
        XCTAssertEqual(second.sent.map(\.0), [[9], [7]])
        XCTAssertEqual(first.sent.count, 2, "sent once only")
    }

    func testSendsAtOnceWhenTheLimitIsReached() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop, limit: 100)
        let sender = Recorder()
        let big = [UInt8](repeating: 0xAB, count: 60)
        big.withUnsafeBytes { batch.append($0, from: sender, to: a) }
        XCTAssertTrue(sender.sent.isEmpty)
        big.withUnsafeBytes { batch.append($0, from: sender, to: a) }
        XCTAssertEqual(sender.sent.map(\.0), [big, big], "120 bytes held passes the 100-byte limit")
        bytes([1]).withUnsafeBytes { batch.append($0, from: sender, to: b) }
        runOneTurn(loop)
        XCTAssertEqual(sender.sent.map(\.0), [big, big, [1]])
    }
}
