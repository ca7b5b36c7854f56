import Glibc
import SluiceIO
import SluiceLoop
import SluiceWire
import XCTest

@testable import SluiceRelay

/// A worker's UDP sockets for associations: made and bound after the turn that took one, closed
/// after the turn that ended one.
final class AssociationSocketsTests: XCTestCase {
    private var loop: EventLoop!
    private var sockets: AssociationSockets!

    override func setUpWithError() throws {
        loop = try EventLoop()
        sockets = AssociationSockets(loop: loop)
    }

    override func tearDown() {
        sockets?.shutdown()
        sockets = nil
        loop = nil
        super.tearDown()
    }

    /// Runs the loop for one turn, with what the turn's end does.
    private func endTurn() {
        loop.afterTurn { self.loop.stop() }
        loop.run()
    }

    private func port(_ socket: Socket) throws -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let r = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket.fd, $0, &length) }
        }
        XCTAssertEqual(r, 0)
        return try XCTUnwrap(SocketEndpoint(storage: storage)).port
    }

    private func inode(_ fd: Int32) -> ino_t? {
        var st = stat()
        return fstat(fd, &st) == 0 ? st.st_ino : nil
    }

    func testSocketsAreMadeReadyAfterTheTurnThatTookOne() throws {
        XCTAssertEqual(sockets.ready.count, 0, "nothing before the first association")
        let (first, _) = try sockets.take()
        XCTAssertNotEqual(try port(first), 0, "bound at once: the first send does not wait for a port")
        XCTAssertEqual(sockets.ready.count, 0, "made after the turn, not inside it")
        endTurn()
        XCTAssertEqual(sockets.ready.count, AssociationSockets.readyCount)

        let (second, _) = try sockets.take()
        XCTAssertNotEqual(try port(second), 0)
        XCTAssertEqual(sockets.ready.count, AssociationSockets.readyCount - 1, "the second came from the ready ones")
        endTurn()
        XCTAssertEqual(sockets.ready.count, AssociationSockets.readyCount)
        sockets.retire(first)
        sockets.retire(second)
    }

    /// Nobody was told a ready socket's port, so whatever reached it is no answer to anything: the
    /// association that takes the socket does not see it.
    func testWhatReachedAReadySocketIsDroppedWhenItIsTaken() throws {
        let (first, _) = try sockets.take()
        endTurn()
        let next = try XCTUnwrap(sockets.ready.last).socket
        let sender = try Socket.udpBound(on: SocketEndpoint("127.0.0.1:0")!)
        defer { sender.close() }
        let target = SocketEndpoint(address: IPAddress("127.0.0.1")!, port: try port(next))
        _ = try [UInt8](repeating: 7, count: 100).withUnsafeBytes { try sender.send(datagram: $0, to: target, dualStack: false) }
        usleep(20_000)
        let (taken, _) = try sockets.take()
        XCTAssertEqual(taken.fd, next.fd)
        XCTAssertEqual(taken.discardQueuedDatagrams(), 0, "the stray datagram went before the association saw it")
        sockets.retire(taken)
        sockets.retire(first)
    }

    func testDiscardingDropsEveryQueuedDatagram() throws {
        let (socket, _) = try Socket.udpAnyFamilyBound()
        defer { socket.close() }
        let sender = try Socket.udpBound(on: SocketEndpoint("127.0.0.1:0")!)
        defer { sender.close() }
        let target = SocketEndpoint(address: IPAddress("127.0.0.1")!, port: try port(socket))
        for _ in 0..<3 {
            _ = try [UInt8](repeating: 7, count: 1_000).withUnsafeBytes { try sender.send(datagram: $0, to: target, dualStack: false) }
        }
        usleep(20_000)
        XCTAssertEqual(socket.discardQueuedDatagrams(), 3)
        XCTAssertEqual(socket.discardQueuedDatagrams(), 0, "nothing left")
    }

    func testARetiredSocketIsClosedAfterTheTurnAndTheLastOneTakesTheReadyOnesAlong() throws {
        let (kept, _) = try sockets.take()
        let (ended, _) = try sockets.take()
        endTurn()
        let endedInode = try XCTUnwrap(inode(ended.fd))
        sockets.retire(ended)
        XCTAssertEqual(inode(ended.fd), endedInode, "still open during the turn it ended in")
        endTurn()
        XCTAssertNotEqual(inode(ended.fd), endedInode, "closed at the turn's end")
        XCTAssertEqual(sockets.ready.count, AssociationSockets.readyCount, "kept ready while an association lives")

        sockets.retire(kept)
        endTurn()
        XCTAssertEqual(sockets.ready.count, 0, "none kept once the worker has no association")
    }
}
