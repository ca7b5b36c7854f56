// libFuzzer entry point for the record layer (docs/protocol.md §2): RecordOpener on what a peer or
// the path could send, and RecordSealer on lengths a caller could pass. Built against a SluiceCrypto
// compiled with -enable-testing (see Fuzz/README.md).
//
// The first input byte picks a mode:
// - even: the rest is a ciphertext stream, fed to an opener in pieces whose size the first byte
//   picks (from one byte to more than a record). No record may open (nothing was sealed under that key), the opener may only ask for more
//   bytes or fail, and once it failed it must repeat the same error.
// - odd: the rest describes real records and damage to them: a count byte, then that many size
//   bytes (a record's size is the byte times 61, plus 1; 255 is the largest record, 65,519 bytes),
//   then pairs
//   (offset, xor mask) flipped into the sealed stream, the last byte cutting it short when the mode's
//   bit 1 is set. The stream, sealed with a rekey every 3 records, is fed in pieces; every record
//   that opens must be the one sealed at its position, no record from the first damaged one on may
//   open, and an undamaged, uncut stream must open completely.
// Along the way the sealer is given the lengths 0 and 65,520, which it must refuse without using up
// a record number.
import Glibc
@testable import SluiceCrypto
import SluiceIO

private let key = try! SymmetricKey(bytes: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) })
/// The lengths the sealer must refuse, allocated once: a 65,520-byte array per record was a large
/// share of the run time.
private let refused = [0, RecordFormat.maxPlaintextLength + 1].map { [UInt8](repeating: 1, count: $0) }
/// Sizes of the pieces the stream is fed in, as TCP reads deliver it: byte by byte up to whole records.
private let pieces = [1, 2, 7, 17, 64, 500, 1460, 4096, 16_384, 65_537, 200_000]

@_cdecl("LLVMFuzzerTestOneInput")
public func recordFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: data, count: size))
    guard let mode = bytes.first else { return 0 }
    let piece = pieces[Int(mode >> 2) % pieces.count]
    if mode & 1 == 0 {
        openGarbage(Array(bytes.dropFirst()), piece: piece)
    } else {
        openDamaged(Array(bytes.dropFirst()), piece: piece, cut: mode & 2 != 0)
    }
    return 0
}

/// At most 256 pieces per stream: feeding half a megabyte byte by byte tests nothing more than
/// feeding 8 KiB so, and would slow the fuzzer a hundredfold.
private func pieceSize(_ piece: Int, streamLength: Int) -> Int {
    max(piece, streamLength / 256)
}

private func openGarbage(_ stream: [UInt8], piece: Int) {
    let opener = RecordOpener(key: key)
    let piece = pieceSize(piece, streamLength: stream.count)
    var at = 0
    var failure: RecordError?
    while at < stream.count, failure == nil {
        stream.withUnsafeBytes { opener.feed(UnsafeRawBufferPointer(rebasing: $0[at..<min(at + piece, stream.count)])) }
        at += piece
        do {
            while let record = try opener.nextRecord() {
                fatalError("a record of \(record.count) bytes opened from bytes nobody sealed")
            }
        } catch {
            failure = error
            require(!error.description.isEmpty)
        }
    }
    if let failure {
        do {
            _ = try opener.nextRecord()
            fatalError("the opener went on after \(failure)")
        } catch {
            require(error == failure, "the opener changed its error from \(failure) to \(error)")
        }
    }
}

private func openDamaged(_ spec: [UInt8], piece: Int, cut: Bool) {
    guard let count = spec.first.map({ Int($0 % 8) }), spec.count > count else { return }
    let sizes = spec.dropFirst().prefix(count).map { $0 == 255 ? RecordFormat.maxPlaintextLength : Int($0) * 61 + 1 }
    let sealer = RecordSealer(key: key, rekeyInterval: 3)
    let wire = ByteQueue()
    var plaintexts: [[UInt8]] = []
    var ends: [Int] = []  // where each record ends in the stream
    for (index, size) in sizes.enumerated() {
        let plaintext = [UInt8](repeating: UInt8(index), count: size)
        for bad in refused {
            let before = sealer.counter
            do {
                try sealer.seal(bad, into: wire)
                fatalError("the sealer took a \(bad.count)-byte record")
            } catch {
                require(error == .badLength(bad.count) && sealer.counter == before && wire.count == (ends.last ?? 0))
            }
        }
        try! sealer.seal(plaintext, into: wire)
        plaintexts.append(plaintext)
        ends.append(wire.count)
    }
    let sealed = Array(wire.readableBytes)
    var stream = sealed
    var flips = Array(spec.dropFirst(count + 1))
    if cut, let last = flips.popLast() { stream.removeLast(Int(last) % (stream.count + 1)) }
    guard !stream.isEmpty else { return }
    var damage: [Int: UInt8] = [:]  // offset: the XOR of every flip there (flips may cancel)
    var i = 0
    while i + 1 < flips.count {
        let offset = Int(flips[i]) % stream.count
        stream[offset] ^= flips[i + 1]
        damage[offset, default: 0] ^= flips[i + 1]
        i += 2
    }
    let firstDamage = damage.filter { $0.value != 0 }.keys.min() ?? stream.count
    // Damage to a record's bytes keeps that record and all later ones from opening; so does a cut.
    let firstBad = ends.firstIndex { $0 > firstDamage } ?? ends.count

    let opener = RecordOpener(key: key, rekeyInterval: 3)
    let piece = pieceSize(piece, streamLength: stream.count)
    var opened = 0
    var at = 0
    var failed = false
    while at < stream.count, !failed {
        stream.withUnsafeBytes { opener.feed(UnsafeRawBufferPointer(rebasing: $0[at..<min(at + piece, stream.count)])) }
        at += piece
        do {
            while let record = try opener.nextRecord() {
                require(opened < firstBad, "record \(opened) opened although it was damaged or cut")
                // memcmp, not elementsEqual: the instrumented byte loop was a quarter of the run time.
                require(plaintexts[opened].withUnsafeBytes { record.count == $0.count && memcmp(record.baseAddress!, $0.baseAddress!, $0.count) == 0 },
                        "record \(opened) opened to other bytes")
                opened += 1
            }
        } catch {
            require(firstDamage < stream.count, "an undamaged stream failed: \(error)")
            failed = true
        }
    }
    if firstDamage == stream.count, stream.count == sealed.count {
        require(!failed && opened == plaintexts.count && opener.bufferedByteCount == 0,
                     "an intact stream did not open completely")
    }
}

/// `precondition` that also prints its message in an optimised build, so that a crash says what broke.
private func require(_ condition: Bool, _ message: @autoclosure () -> String = "") {
    if !condition { fatalError(message()) }
}
