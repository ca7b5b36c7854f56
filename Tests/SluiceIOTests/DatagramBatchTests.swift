import Glibc
import SluiceLoop
import SluiceSystem
import SluiceWire
import XCTest

@testable import SluiceIO

/// The per-turn batch of datagrams sent with sendmmsg: over real sockets (UDP on loopback, and a
/// Unix datagram socketpair where the kernel must refuse a size or run out of room). With
/// `batchSegmentation`, runs go as UDP GSO sends: loopback keeps such a send one skb up to a
/// receiving socket with UDP GRO on, so one read there shows what went as one send.
final class DatagramBatchTests: XCTestCase {
    /// A sender over one socket that records what the batch told it.
    private final class Sender: DatagramBatchSender {
        var socket: Socket?
        var refused: [([UInt8], Int32)] = []
        var dropped = 0
        var batchSegmentation = false
        init(_ socket: Socket?, segmenting: Bool = false) {
            self.socket = socket
            batchSegmentation = segmenting
        }
        var batchSocket: Socket? { socket }
        var batchDualStack: Bool { false }
        func batch(refused packet: UnsafeMutableRawBufferPointer, to endpoint: SocketEndpoint?, code: Int32) {
            refused.append((Array(packet), code))
        }
        func batch(droppedForFullSocket count: Int) { dropped += count }
    }

    private let sockets = TestSockets()

    override func tearDown() { sockets.closeAll() }

    /// A connected Unix datagram pair whose sending end has the smallest send buffer, so that the
    /// kernel refuses a large datagram (EMSGSIZE) and fills up after a few (EAGAIN).
    private func unixPair() throws -> (send: Socket, receive: Socket) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0 else {
            throw SystemError("socketpair")
        }
        let pair = (send: Socket(fd: fds[0]), receive: Socket(fd: fds[1]))
        sockets.adopt(pair.send)
        sockets.adopt(pair.receive)
        try pair.send.setOption(SOL_SOCKET, SO_SNDBUF, 4096, "SO_SNDBUF")
        return pair
    }

    /// Everything waiting on `socket`, in order.
    private func drain(_ socket: Socket) throws -> [[UInt8]] {
        var got: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while case .done(let n) = try buffer.withUnsafeMutableBytes({ try socket.read(into: $0) }) { got.append(Array(buffer[0..<n])) }
        return got
    }

    private func runOneTurn(_ loop: EventLoop) {
        loop.afterTurn { loop.stop() }
        loop.run()
    }

    func testHoldsDatagramsUntilTheEndOfTheTurnThenSendsThemInOrder() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let (a, aEndpoint) = try sockets.bound()
        let (b, bEndpoint) = try sockets.bound()
        let first = Sender(try sockets.unbound()), second = Sender(try sockets.unbound())
        [UInt8]([1, 2, 3]).withUnsafeBytes { batch.append($0, to: aEndpoint, from: first) }
        [UInt8]([9]).withUnsafeBytes { batch.append($0, to: bEndpoint, from: second) }
        [UInt8]([4, 5]).withUnsafeBytes { batch.append($0, to: bEndpoint, from: first) }
        XCTAssertEqual(batch.count, 3)
        XCTAssertEqual(try drain(a) + drain(b), [], "nothing goes before the turn ends")

        runOneTurn(loop)
        XCTAssertEqual(batch.count, 0)
        XCTAssertEqual(try drain(a), [[1, 2, 3]])
        XCTAssertEqual(try drain(b), [[9], [4, 5]], "in the order they came, across senders")

        // The next turn starts empty and schedules its own flush.
        [UInt8]([7]).withUnsafeBytes { batch.append($0, to: aEndpoint, from: second) }
        runOneTurn(loop)
        XCTAssertEqual(try drain(a), [[7]])
        XCTAssertEqual(try drain(b), [], "sent once only")
    }

    func testWritesInPlaceAndQueuesNothingWhenTheWriterDeclines() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let (r, endpoint) = try sockets.bound()
        let sender = Sender(try sockets.unbound())
        batch.append(to: endpoint, from: sender, reserving: 100) { room in
            room[0] = 0xAA
            room[1] = 0xBB
            return 2
        }
        batch.append(to: endpoint, from: sender, reserving: 100) { _ in nil }
        XCTAssertEqual(batch.count, 1)
        batch.flush()
        XCTAssertEqual(try drain(r), [[0xAA, 0xBB]])
    }

    func testSendsAtOnceWhenTheLimitIsReached() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop, limit: 100)
        let (r, endpoint) = try sockets.bound()
        let sender = Sender(try sockets.unbound())
        let big = [UInt8](repeating: 0xAB, count: 60)
        big.withUnsafeBytes { batch.append($0, to: endpoint, from: sender) }
        big.withUnsafeBytes { batch.append($0, to: endpoint, from: sender) }
        XCTAssertEqual(try drain(r), [big], "the second did not fit beside the first: the first went")
        runOneTurn(loop)
        XCTAssertEqual(try drain(r), [big])
    }

    func testARefusedDatagramIsReportedAndTheOnesAfterItStillGo() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let (send, receive) = try unixPair()
        let sender = Sender(send)
        let huge = [UInt8](repeating: 0x55, count: 20_000)  // more than the send buffer: EMSGSIZE
        for payload in [[1], [2], huge, [3]] as [[UInt8]] { payload.withUnsafeBytes { batch.append($0, to: nil, from: sender) } }
        batch.flush()
        // sendmmsg sent two and stopped (a partial result); the next call failed on the third.
        XCTAssertEqual(try drain(receive), [[1], [2], [3]])
        XCTAssertEqual(sender.refused.map(\.0), [huge])
        XCTAssertEqual(sender.refused.map(\.1), [EMSGSIZE])
        XCTAssertEqual(sender.dropped, 0)
    }

    func testAFullSocketDropsTheRestOfTheRunAndSaysHowMany() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let (send, receive) = try unixPair()
        let sender = Sender(send)
        let payloads = (0..<40).map { [UInt8](repeating: UInt8($0), count: 1_000) }
        for p in payloads { p.withUnsafeBytes { batch.append($0, to: nil, from: sender) } }
        batch.flush()
        let got = try drain(receive)
        XCTAssertGreaterThan(got.count, 0)
        XCTAssertLessThan(got.count, payloads.count, "the small send buffer filled up")
        XCTAssertEqual(got, Array(payloads.prefix(got.count)), "what went, went in order")
        XCTAssertEqual(got.count + sender.dropped, payloads.count, "every datagram is sent or counted as dropped")
        XCTAssertTrue(sender.refused.isEmpty)
    }

    func testASenderWhoseSocketClosedDropsItsOwnOnly() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let (r, endpoint) = try sockets.bound()
        let gone = Sender(try sockets.unbound()), live = Sender(try sockets.unbound())
        [UInt8]([1]).withUnsafeBytes { batch.append($0, to: endpoint, from: gone) }
        [UInt8]([2]).withUnsafeBytes { batch.append($0, to: endpoint, from: live) }
        gone.socket = nil
        batch.flush()
        XCTAssertEqual(try drain(r), [[2]])
    }

    // MARK: UDP GSO

    /// A UDP socket on loopback with UDP GRO on: a GSO send reaches it whole, one read.
    private func coalescingReceiver() throws -> (Socket, SocketEndpoint) {
        let (r, endpoint) = try sockets.bound()
        XCTAssertTrue(DatagramReceiver.enableCoalescing(on: r), "UDP_GRO (Linux 5.0+)")
        return (r, endpoint)
    }

    private func bytes(_ count: Int, _ value: Int) -> [UInt8] { [UInt8](repeating: UInt8(value), count: count) }

    func testARunOfEqualSizedDatagramsLeavesAsOneSegmentedSend() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let (r, endpoint) = try coalescingReceiver()
        let payloads = (0..<16).map { bytes(100, $0) } + [bytes(40, 99)]  // the last may be shorter
        let sender = Sender(try sockets.unbound(), segmenting: true)
        for p in payloads { p.withUnsafeBytes { batch.append($0, to: endpoint, from: sender) } }
        batch.flush()
        XCTAssertEqual(try drain(r), [payloads.flatMap { $0 }], "one skb: one read of all 17")

        // The same run from a sender without segmentation: 17 datagrams, 17 reads.
        let plain = Sender(try sockets.unbound())
        for p in payloads { p.withUnsafeBytes { batch.append($0, to: endpoint, from: plain) } }
        batch.flush()
        XCTAssertEqual(try drain(r), payloads)
        XCTAssertTrue(sender.refused.isEmpty && plain.refused.isEmpty)
    }

    func testASegmentedSendArrivesAsSeparateDatagramsWithoutGRO() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let (r, endpoint) = try sockets.bound()  // no UDP_GRO: the kernel cuts the skb up on receive
        let payloads = (0..<5).map { bytes(300, $0) } + [bytes(7, 9)]
        let sender = Sender(try sockets.unbound(), segmenting: true)
        for p in payloads { p.withUnsafeBytes { batch.append($0, to: endpoint, from: sender) } }
        batch.flush()
        XCTAssertEqual(try drain(r), payloads)
    }

    func testAGroupEndsAtAShorterDatagramALongerOneAnotherDestinationOrAnEmptyOne() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let (r, endpoint) = try coalescingReceiver()
        let (other, otherEndpoint) = try coalescingReceiver()
        let sender = Sender(try sockets.unbound(), segmenting: true)
        let sent: [([UInt8], SocketEndpoint)] = [
            (bytes(100, 1), endpoint), (bytes(100, 2), endpoint), (bytes(50, 3), endpoint),  // ends at the shorter one
            (bytes(100, 4), endpoint), (bytes(200, 5), endpoint),  // a longer one starts a new group
            (bytes(200, 6), otherEndpoint), (bytes(200, 7), endpoint),  // so does another destination
            ([], endpoint), ([], endpoint), (bytes(30, 8), endpoint), ([], endpoint),  // empty ones go alone
        ]
        for (p, to) in sent { p.withUnsafeBytes { batch.append($0, to: to, from: sender) } }
        batch.flush()
        XCTAssertEqual(try drain(r), [bytes(100, 1) + bytes(100, 2) + bytes(50, 3), bytes(100, 4), bytes(200, 5), bytes(200, 7),
                                      [], [], bytes(30, 8), []])
        XCTAssertEqual(try drain(other), [bytes(200, 6)])
    }

    func testARefusedSegmentedSendIsSentAgainDatagramByDatagram() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let (r, endpoint) = try coalescingReceiver()
        let socket = try sockets.unbound()
        // Without UDP checksums the kernel refuses every GSO send (EINVAL); single datagrams go.
        try socket.setOption(SOL_SOCKET, SO_NO_CHECK, 1, "SO_NO_CHECK")
        let sender = Sender(socket, segmenting: true)
        let payloads = (0..<8).map { bytes(64, $0) }
        for p in payloads { p.withUnsafeBytes { batch.append($0, to: endpoint, from: sender) } }
        batch.flush()
        XCTAssertEqual(try drain(r), payloads, "every datagram went, in order, one each")
        XCTAssertTrue(sender.refused.isEmpty, "the refusal was the group's, not a datagram's")
        XCTAssertEqual(sender.dropped, 0)
        XCTAssertTrue(sender.batchSegmentation, "EINVAL may be this run's (a segment over the MTU): kept on")
    }

    func testAReceiverSplitsACoalescedSlotIntoItsDatagramsWithTheirSource() throws {
        let loop = try EventLoop()
        let batch = DatagramBatch(loop: loop)
        let (r, endpoint) = try coalescingReceiver()
        let (s, source) = try sockets.bound()
        let sender = Sender(s, segmenting: true)
        let payloads = (0..<10).map { bytes(120, $0) } + [bytes(1, 10)]
        for p in payloads { p.withUnsafeBytes { batch.append($0, to: endpoint, from: sender) } }
        batch.flush()
        [UInt8]([42]).withUnsafeBytes { batch.append($0, to: endpoint, from: sender) }  // a second skb
        batch.flush()

        let receiver = DatagramReceiver(slots: 4)
        XCTAssertEqual(try receiver.receive(from: r), .done(12), "two slots, twelve datagrams")
        XCTAssertTrue(receiver.drained, "two of four slots: the queue was empty")
        for (i, p) in (payloads + [[42]]).enumerated() {
            XCTAssertEqual(Array(receiver.packet(i)), p)
            XCTAssertEqual(receiver.source(i), source)
            XCTAssertFalse(receiver.truncated(i))
        }
        XCTAssertEqual(try receiver.receive(from: r), .wouldBlock)
    }
}
