import SluiceWire
import XCTest

@testable import SluiceMux

/// `receive(record:yieldingWhen:)`: a record handled in slices, resumed at a frame boundary, is
/// handled exactly as if in one go.
final class MuxYieldTests: XCTestCase {
    func testARecordHandledInSlicesHandlesEveryFrameOnce() throws {
        let pair = MuxPair()
        var opens: [TestFrame] = []
        for i in 0..<100 {
            opens.append(.control(.open(stream: UInt32(2 * i + 1), window: 1000, proto: .tcp,
                                        destination: Destination(host: .ip(IPAddress("192.0.2.1")!), port: UInt16(1000 + i)))))
        }
        let record = try encodeRecord(opens)
        var slices = 0
        try record.withUnsafeBytes { all in
            var rest = all
            while true {
                slices += 1
                guard let stop = try pair.relay.receive(record: rest, yieldingWhen: { true }) else { break }
                XCTAssertGreaterThan(stop, 0)
                rest = UnsafeRawBufferPointer(rebasing: rest[stop...])
            }
        }
        XCTAssertEqual(slices, 4, "32 frames per slice: 32 + 32 + 32 + 4")
        XCTAssertEqual(pair.relayCarrier.requests.map(\.destination.port), (0..<100).map { UInt16(1000 + $0) })
    }

    func testNoYieldWithoutAQuestionOrAtTheEnd() throws {
        let pair = MuxPair()
        let record = try encodeRecord((0..<32).map { _ in .control(.ping(7)) })
        let stop = try record.withUnsafeBytes { try pair.relay.receive(record: $0, yieldingWhen: { true }) }
        XCTAssertNil(stop, "after the last frame there is nothing to resume")
        XCTAssertNil(try record.withUnsafeBytes { try pair.relay.receive(record: $0, yieldingWhen: { false }) })
    }
}
