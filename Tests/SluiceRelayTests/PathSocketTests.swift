import SluiceCrypto
import SluiceIO
import SluiceLoop
import SluiceMux
import SluiceWire
import XCTest

@testable import SluiceRelay

/// The relay's UDP path with several workers: each worker has its own socket on the listener's
/// port, and the kernel gives a path packet to the worker whose class its receiver index is in
/// (`PathSocket`), so a carrier's path packets reach the worker holding the carrier. Checked on
/// real sockets over loopback: packets for unknown indices are counted by the worker that read them.
/// (Real clients' paths on two workers: Tests/E2E/test_workers.py.)
final class PathSocketTests: XCTestCase {
    func settings(workers: Int) -> RelaySettings {
        var settings = RelaySettings(listen: SocketEndpoint(address: IPAddress("127.0.0.1")!, port: 0), privateKey: PrivateKey.generate(),
                                     allowedClients: [PrivateKey.generate().publicKey], psk: nil, maxStreamsPerClient: 8,
                                     handshakeTimeoutMilliseconds: 1000)
        settings.workers = workers
        return settings
    }

    func testEachWorkerGivesOutIndicesOfItsOwnClassOnly() throws {
        for residue in 0..<3 {
            let place = PathSocket(socket: Socket(fd: -1), dualStack: false, residue: residue, workers: 3)
            var seen = Set<UInt32>()
            for _ in 0..<1000 {
                let index = place.newIndex { seen.contains($0) }
                XCTAssertNotEqual(index, 0)
                XCTAssertEqual(Int(index % 3), residue)
                XCTAssertTrue(seen.insert(index).inserted, "never one already taken")
            }
        }
        let only = PathSocket(socket: Socket(fd: -1), dualStack: false, residue: 0, workers: 1)
        XCTAssertNotEqual(only.newIndex { _ in false }, 0)
    }

    /// Sends path packets (valid headers, indices no carrier has) and a packet too short for an
    /// index to `relay`'s UDP port, runs the front's loop a moment, and returns each worker's
    /// (unknown-index, malformed) counts.
    func countsPerWorker(_ relay: RelayServer, loop: EventLoop, indices: [UInt32]) throws -> [[Int]] {
        let sender = try Socket.udp(for: relay.listeningEndpoint.address)
        defer { sender.close() }
        var packet = [UInt8](repeating: 0, count: PathHeader.minimumPacket)
        for index in indices {
            packet.withUnsafeMutableBytes { PathHeader(kind: .datagram, index: index, counter: 0).emit(into: $0) }
            _ = try packet.withUnsafeBytes { try sender.send(datagram: $0, to: relay.listeningEndpoint, dualStack: false) }
        }
        _ = try [UInt8](repeating: 1, count: 3).withUnsafeBytes {
            try sender.send(datagram: $0, to: relay.listeningEndpoint, dualStack: false)
        }
        loop.schedule(afterMilliseconds: 200) { loop.stop() }
        loop.run()
        return relay.workers.gather { worker in
            [worker.udpPath?.counters.unknownIndex ?? -1, worker.udpPath?.counters.malformed ?? -1]
        }
    }

    func testAPathPacketReachesTheWorkerOfItsIndex() throws {
        let loop = try EventLoop()
        let relay = try RelayServer(settings: settings(workers: 2), loop: loop)
        defer { relay.shutdown() }
        XCTAssertTrue(relay.workers.udpPath)
        let counts = try countsPerWorker(relay, loop: loop, indices: [1, 3, 5, 7, 9, 2, 4, 0xFFFF_FFFE])
        XCTAssertEqual(counts, [[3, 1], [5, 0]], "even indices and the short packet on worker 0, odd ones on worker 1")
    }

    func testOneWorkerReadsEveryPacketOnOneSocket() throws {
        let loop = try EventLoop()
        let relay = try RelayServer(settings: settings(workers: 1), loop: loop)
        defer { relay.shutdown() }
        let counts = try countsPerWorker(relay, loop: loop, indices: [1, 2, 3])
        XCTAssertEqual(counts, [[3, 1]])
    }
}
