extension FragmentReassembler {
    /// One datagram in progress, and the memory it is rebuilt in.
    ///
    /// The data goes at `dataStart + offset` in `buffer`; the first fragment's header goes right in
    /// front of `dataStart`, so that the finished packet is one contiguous run. Three bitmaps over
    /// the datagram's 8-byte units (8192 of them) tell what is held: `covered` (a unit holds data),
    /// `starts` (a fragment begins there) and `ends` (a fragment ends before it). Fragments never
    /// overlap once held, so a new fragment is an exact duplicate of a held one when every unit it
    /// spans is covered, one held fragment starts where it starts, none starts inside it, and one
    /// ends where it ends.
    final class Slot {
        static let dataStart = Piece.maximumHeaderLength
        static let capacity = dataStart + 0xFFFF
        static let units = 0x1_0000 / 8
        static let words = units / 64

        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Slot.capacity, alignment: 8)
        /// `covered`, `starts` and `ends`, `words` words each; `ends` has one spare word for the
        /// unit past the last.
        private let bits = UnsafeMutablePointer<UInt64>.allocate(capacity: 3 * Slot.words + 1)

        var inUse = false
        var key = Key(source: .v4(0), destination: .v4(0), proto: 0, identification: 0)
        var started: UInt64 = 0
        /// Age rank: lower is older.
        var order: UInt64 = 0
        /// Data bytes held.
        var received = 0
        /// The datagram's data length, known once the last fragment arrived; and where that one starts.
        var dataLength: Int? = nil
        var lastStart = -1
        /// The highest data end held.
        var maximumEnd = 0
        /// The kept header's length (0 until the first fragment arrived) and, for IPv6, its link.
        var headerLength = 0
        var link: Int? = nil

        deinit {
            buffer.deallocate()
            bits.deallocate()
        }

        func reset(key: Key, started: UInt64, order: UInt64) {
            inUse = true
            self.key = key
            self.started = started
            self.order = order
            received = 0
            dataLength = nil
            lastStart = -1
            maximumEnd = 0
            headerLength = 0
            link = nil
            bits.initialize(repeating: 0, count: 3 * Slot.words + 1)
        }

        // MARK: bitmaps

        private func test(_ map: Int, _ unit: Int) -> Bool {
            bits[map * Slot.words + unit / 64] & (1 << UInt64(unit % 64)) != 0
        }

        private func set(_ map: Int, _ unit: Int) {
            bits[map * Slot.words + unit / 64] |= 1 << UInt64(unit % 64)
        }

        func anyCovered(_ units: Range<Int>) -> Bool {
            units.contains { test(0, $0) }
        }

        func isDuplicate(_ units: Range<Int>) -> Bool {
            guard units.allSatisfy({ test(0, $0) }), test(1, units.lowerBound), test(2, units.upperBound) else { return false }
            return !units.dropFirst().contains { test(1, $0) }
        }

        // MARK: data

        /// Copies the fragment's data (and a first fragment's header) in and marks its units.
        func store(_ piece: Piece, _ units: Range<Int>) {
            let at = Slot.dataStart + piece.offset
            UnsafeMutableRawBufferPointer(rebasing: buffer[at..<at + piece.data.count]).copyMemory(from: piece.data)
            for unit in units { set(0, unit) }
            set(1, units.lowerBound)
            set(2, units.upperBound)
            received += piece.data.count
            maximumEnd = max(maximumEnd, piece.offset + piece.data.count)
            if piece.offset == 0 {
                headerLength = piece.header.count
                link = piece.link
                let from = Slot.dataStart - headerLength
                UnsafeMutableRawBufferPointer(rebasing: buffer[from..<Slot.dataStart]).copyMemory(from: piece.header)
            }
        }

        /// The whole packet with its header fixed, or nil if it would exceed 65,535 bytes (possible
        /// when the first fragment's header is longer than the one a later fragment was checked with).
        func finish(dataLength: Int) -> UnsafeRawBufferPointer? {
            let from = Slot.dataStart - headerLength
            let packet = UnsafeMutableRawBufferPointer(rebasing: buffer[from..<Slot.dataStart + dataLength])
            if let link {
                let payloadLength = headerLength - IPv6Header.length + dataLength
                guard payloadLength <= 0xFFFF else { return nil }
                packet.writeU16(UInt16(payloadLength), at: 4)
                packet[link] = key.proto
            } else {
                guard packet.count <= 0xFFFF else { return nil }
                packet.writeU16(UInt16(packet.count), at: 2)
                packet.writeU16(UInt16(bigEndian: packet.loadUnaligned(fromByteOffset: 6, as: UInt16.self)) & 0xC000, at: 6)
                packet.writeU16(0, at: 10)
                packet.writeU16(Checksum.checksum(UnsafeRawBufferPointer(rebasing: packet[0..<headerLength])), at: 10)
            }
            return UnsafeRawBufferPointer(packet)
        }
    }
}
