import SluiceTestSupport
import XCTest
@testable import SluiceCrypto
import SluiceIO


final class RecordTests: XCTestCase {
    let key = try! SymmetricKey(bytes: Array(0..<32))

    func sealAll(_ plaintexts: [[UInt8]], sealer: RecordSealer) throws -> [UInt8] {
        let out = ByteQueue()
        for p in plaintexts { try sealer.seal(p, into: out) }
        return Array(out.readableBytes)
    }

    /// Pulls every complete record.
    func drain(_ opener: RecordOpener) throws -> [[UInt8]] {
        var records: [[UInt8]] = []
        while let record = try opener.nextRecord() { records.append(Array(record)) }
        return records
    }

    func randomPlaintexts(_ count: Int, maxLength: Int, rng: inout SplitMix64) -> [[UInt8]] {
        (0..<count).map { _ in
            (0..<Int.random(in: 1...maxLength, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }
    }

    /// Known answers computed by an independent Python implementation of docs/protocol.md §2 (the
    /// `cryptography` package's ChaCha20Poly1305 and ChaCha20, `hmac`): key 00..1f, rekey every 3.
    func testRecordsMatchAnIndependentImplementation() throws {
        let plaintexts: [[UInt8]] = [Array("hello".utf8), [0], Array(0..<40), Array("after rekey".utf8), Array("zzz".utf8)]
        let expected = [
            "b9ce70dd2e5dc2f35b991544945786ed78dcc68c345f42",
            "5de59fa6e8bb912bb9c7054007931f9ddec249",
            "b73ba9a2fc56e3efaa69c346357bc0c36fbad481be3890a659f6a5be3bcad1b932eab03878945858ce7c3f257d606de0c0a575c44cf3faeea2f1",
            "8437baad6168d182b87cb7869c9e894a19f2b29e08c3894b2b47c90b59",
            "50b847bb037a8e47abe916dce0d92f2aa4185a0b8b",
        ]
        let sealer = RecordSealer(key: key, rekeyInterval: 3)
        let opener = RecordOpener(key: key, rekeyInterval: 3)
        for (plaintext, hex) in zip(plaintexts, expected) {
            let out = ByteQueue()
            try sealer.seal(plaintext, into: out)
            XCTAssertEqual(Hex.encode(Array(out.readableBytes)), hex)
            opener.feed(Hex.decode(hex))
            XCTAssertEqual(try opener.nextRecord().map(Array.init), plaintext)
        }
        XCTAssertEqual(sealer.counter, 5)
        XCTAssertEqual(opener.counter, 5)
    }

    func testByteByByteFeeding() throws {
        var rng = SplitMix64(seed: 1)
        let plaintexts = randomPlaintexts(40, maxLength: 300, rng: &rng) + [[UInt8](repeating: 0xab, count: RecordFormat.maxPlaintextLength)]
        let stream = try sealAll(plaintexts, sealer: RecordSealer(key: key))
        let opener = RecordOpener(key: key)
        var received: [[UInt8]] = []
        for byte in stream {
            opener.feed([byte])
            received += try drain(opener)
        }
        XCTAssertEqual(received, plaintexts)
        XCTAssertEqual(opener.bufferedByteCount, 0)
    }

    func testRandomSplitPoints() throws {
        for seed in 1...20 as ClosedRange<UInt64> {
            var rng = SplitMix64(seed: seed)
            let plaintexts = randomPlaintexts(30, maxLength: 5000, rng: &rng)
            let stream = try sealAll(plaintexts, sealer: RecordSealer(key: key))
            let opener = RecordOpener(key: key)
            var received: [[UInt8]] = []
            var offset = 0
            while offset < stream.count {
                let size = min(stream.count - offset, Int.random(in: 1...9000, using: &rng))
                opener.feed(Array(stream[offset..<offset + size]))
                offset += size
                received += try drain(opener)
            }
            XCTAssertEqual(received, plaintexts, "seed \(seed)")
        }
    }

    func testManyRecordsInOneChunkThroughReceive() throws {
        var rng = SplitMix64(seed: 99)
        let plaintexts = randomPlaintexts(200, maxLength: 1500, rng: &rng)
        let stream = try sealAll(plaintexts, sealer: RecordSealer(key: key))
        let opener = RecordOpener(key: key)
        let n = opener.receive(minimum: stream.count) { space in
            stream.withUnsafeBytes { space.copyMemory(from: $0) }
            return stream.count
        }
        XCTAssertEqual(n, stream.count)
        XCTAssertEqual(try drain(opener), plaintexts)
    }

    func testSealInPlaceMatchesSeal() throws {
        let plaintext: [UInt8] = Array(repeating: 7, count: 1000)
        let expected = try sealAll([plaintext, plaintext], sealer: RecordSealer(key: key))
        let sealer = RecordSealer(key: key)
        var produced: [UInt8] = []
        for _ in 0..<2 {
            var record = [0, 0] + plaintext + [UInt8](repeating: 0, count: 16)
            try record.withUnsafeMutableBytes { buffer throws in try sealer.sealInPlace(buffer) }
            produced += record
        }
        XCTAssertEqual(produced, expected)
    }

    func testSealerRejectsEmptyAndOversizedPlaintexts() throws {
        let sealer = RecordSealer(key: key)
        let out = ByteQueue()
        for length in [0, RecordFormat.maxPlaintextLength + 1] {
            XCTAssertThrowsError(try sealer.seal([UInt8](repeating: 1, count: length), into: out)) {
                XCTAssertEqual($0 as? RecordError, .badLength(length))
            }
            var record = [UInt8](repeating: 0, count: length + RecordFormat.overhead)
            XCTAssertThrowsError(try record.withUnsafeMutableBytes { buffer throws in try sealer.sealInPlace(buffer) }) {
                XCTAssertEqual($0 as? RecordError, .badLength(length))
            }
        }
        XCTAssertEqual(sealer.counter, 0)
        XCTAssertTrue(out.isEmpty)
        try sealer.seal([UInt8](repeating: 1, count: RecordFormat.maxPlaintextLength), into: out)
        XCTAssertEqual(out.count, RecordFormat.maxRecordLength)
        XCTAssertEqual(out.count, 65_537)
    }

    /// Length fields that decode to 0 or above the maximum, forged with the right length key, are
    /// rejected as soon as the two bytes arrive.
    func testOpenerRejectsForgedLengthsZeroAndTooLarge() throws {
        for bad in [0, RecordFormat.maxPlaintextLength + 1, 0xFFFF] {
            let schedule = RecordKeySchedule(key: key, rekeyInterval: 3)
            let field = UInt16(bad) ^ schedule.lengthMask()
            let opener = RecordOpener(key: key)
            opener.feed([UInt8(field >> 8), UInt8(field & 0xFF)])
            XCTAssertThrowsError(try opener.nextRecord()) { XCTAssertEqual($0 as? RecordError, .badLength(bad)) }
        }
    }

    func testTamperedLengthFails() throws {
        // A low-bit flip yields a plausible length: the tag check (length bytes are the AD) catches it.
        var stream = try sealAll([Array(repeating: 1, count: 100), Array(repeating: 2, count: 100)], sealer: RecordSealer(key: key))
        stream[1] ^= 0x01
        let opener = RecordOpener(key: key)
        opener.feed(stream)
        XCTAssertThrowsError(try opener.nextRecord()) { XCTAssertEqual($0 as? RecordError, .authenticationFailed) }

        // A flip that pushes a maximal record's length out of range is caught before any decryption.
        var big = try sealAll([Array(repeating: 3, count: RecordFormat.maxPlaintextLength)], sealer: RecordSealer(key: key))
        big[1] ^= 0x10 // 0xFFEF ^ 0x0010 = 0xFFFF
        let opener2 = RecordOpener(key: key)
        opener2.feed(Array(big.prefix(2)))
        XCTAssertThrowsError(try opener2.nextRecord()) { XCTAssertEqual($0 as? RecordError, .badLength(0xFFFF)) }
    }

    func testEveryTamperedPayloadOrTagByteFails() throws {
        let stream = try sealAll([Array(0..<64)], sealer: RecordSealer(key: key))
        for index in 2..<stream.count {
            var forged = stream
            forged[index] ^= 0x40
            let opener = RecordOpener(key: key)
            opener.feed(forged)
            XCTAssertThrowsError(try opener.nextRecord(), "byte \(index)") {
                XCTAssertEqual($0 as? RecordError, .authenticationFailed, "byte \(index)")
            }
        }
        let opener = RecordOpener(key: key)
        opener.feed(stream)
        XCTAssertEqual(try opener.nextRecord().map(Array.init), Array(0..<64))
    }

    func testErrorsAreFinal() throws {
        var stream = try sealAll([[1], [2]], sealer: RecordSealer(key: key))
        stream[3] ^= 1
        let opener = RecordOpener(key: key)
        opener.feed(stream)
        XCTAssertThrowsError(try opener.nextRecord())
        opener.feed(try sealAll([[1]], sealer: RecordSealer(key: key)))
        XCTAssertThrowsError(try opener.nextRecord()) { XCTAssertEqual($0 as? RecordError, .authenticationFailed) }
    }

    func testRekeyEveryThreeRecordsOverTen() throws {
        let plaintexts = (0..<10).map { [UInt8](repeating: UInt8($0), count: 50) }
        let rekeying = try sealAll(plaintexts, sealer: RecordSealer(key: key, rekeyInterval: 3))
        let opener = RecordOpener(key: key, rekeyInterval: 3)
        opener.feed(rekeying)
        XCTAssertEqual(try drain(opener), plaintexts)

        // Same bytes as a non-rekeying sealer for records 0-2, different from record 3 on.
        let plain = try sealAll(plaintexts, sealer: RecordSealer(key: key))
        let recordSize = 50 + RecordFormat.overhead
        XCTAssertEqual(Array(rekeying.prefix(3 * recordSize)), Array(plain.prefix(3 * recordSize)))
        for index in 3..<10 {
            let range = index * recordSize..<(index + 1) * recordSize
            XCTAssertNotEqual(Array(rekeying[range]), Array(plain[range]), "record \(index)")
        }
    }

    func testSealerRekeyingAloneBreaksTheStream() throws {
        let plaintexts = (0..<5).map { [UInt8](repeating: UInt8($0), count: 50) }
        let stream = try sealAll(plaintexts, sealer: RecordSealer(key: key, rekeyInterval: 3))
        let opener = RecordOpener(key: key) // default interval: does not rekey at 3
        opener.feed(stream)
        for index in 0..<3 { XCTAssertEqual(try opener.nextRecord().map(Array.init), plaintexts[index]) }
        // Record 3 is under a key the opener does not have: its length decodes to garbage, so supply
        // enough bytes for any length, then it must fail rather than return anything.
        opener.feed([UInt8](repeating: 0, count: RecordFormat.maxRecordLength))
        XCTAssertThrowsError(try opener.nextRecord()) { error in
            switch error as? RecordError {
            case .authenticationFailed?, .badLength?: break
            default: XCTFail("unexpected \(error)")
            }
        }
    }

    func testCounterStopsAtTwoToTheSixtyThird() throws {
        let start = RecordFormat.counterLimit - 1
        let sealer = RecordSealer(key: key, rekeyInterval: RecordFormat.defaultRekeyInterval, startingCounter: start)
        let out = ByteQueue()
        try sealer.seal([42], into: out)
        XCTAssertThrowsError(try sealer.seal([43], into: out)) { XCTAssertEqual($0 as? RecordError, .counterExhausted) }

        let opener = RecordOpener(key: key, rekeyInterval: RecordFormat.defaultRekeyInterval, startingCounter: start)
        opener.feed(Array(out.readableBytes))
        XCTAssertEqual(try opener.nextRecord().map(Array.init), [42])
        opener.feed([0, 0])
        XCTAssertThrowsError(try opener.nextRecord()) { XCTAssertEqual($0 as? RecordError, .counterExhausted) }
    }

    func testHandshakeKeysDriveRecordsBothWays() throws {
        let client = PrivateKey.generate(), relay = PrivateKey.generate()
        let initiator = try SluiceInitiator(localStatic: client, relayStatic: relay.publicKey)
        let response = try SluiceResponder(localStatic: relay)
            .respond(to: initiator.message1, isAllowed: { _ in true }, replayGuard: ReplayGuard())
        let clientKeys = try initiator.finish(message2: response.message2).keys

        let up = try sealAll([Array("to relay".utf8)], sealer: RecordSealer(key: clientKeys.sending))
        let relayOpener = RecordOpener(key: response.keys.receiving)
        relayOpener.feed(up)
        XCTAssertEqual(try relayOpener.nextRecord().map(Array.init), Array("to relay".utf8))

        let down = try sealAll([Array("to client".utf8)], sealer: RecordSealer(key: response.keys.sending))
        let clientOpener = RecordOpener(key: clientKeys.receiving)
        clientOpener.feed(down)
        XCTAssertEqual(try clientOpener.nextRecord().map(Array.init), Array("to client".utf8))

        // The two directions use different keys: a record reflected back to its sender fails.
        let reflected = RecordOpener(key: clientKeys.receiving)
        reflected.feed(up)
        reflected.feed([UInt8](repeating: 0, count: RecordFormat.maxRecordLength))
        XCTAssertThrowsError(try reflected.nextRecord())
    }
}
