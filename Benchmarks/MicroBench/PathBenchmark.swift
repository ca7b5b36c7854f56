import SluiceCrypto

/// The UDP path's AEAD (docs/protocol.md §8, `PathCipher`) on one core: nanoseconds to seal and to
/// open one packet in place, for a small request's body (100 bytes: a DNS query, a game update) and a
/// full one (1,400 bytes: QUIC, a video frame's piece), behind the 16-byte clear header that is the
/// additional data. Opening includes copying the sealed packet in, as the socket read would. A UDP round trip through the path seals and opens one packet at each end.
enum PathBenchmark {
    static let headerLength = 16

    static func run() {
        let key = try! SymmetricKey(bytes: (0..<32).map { UInt8($0) })
        var rows: [[String]] = []
        var json: [[(String, String)]] = []
        for body in [100, 1_400] {
            let seal = nanosecondsPerPacket(body, key, opening: false)
            let open = nanosecondsPerPacket(body, key, opening: true)
            rows.append([String(body), Bench.format(seal, decimals: 0), Bench.format(open, decimals: 0)])
            json.append([("body_bytes", String(body)), ("seal_ns", Bench.format(seal, decimals: 0)), ("open_ns", Bench.format(open, decimals: 0))])
        }
        Bench.printTable(["body bytes", "seal ns", "open ns"], rows)
        Bench.printJSON("path", json)
    }

    /// Seals (or opens a sealed copy of) one packet per call, 1,000 calls per timed round.
    private static func nanosecondsPerPacket(_ body: Int, _ key: SymmetricKey, opening: Bool) -> Double {
        let sealer = PathCipher(key: key), opener = PathCipher(key: key)
        var sealed = [UInt8](repeating: 0x5a, count: headerLength + body + PathCipher.tagLength)
        _ = sealed.withUnsafeMutableBytes { sealer.seal($0, headerLength: headerLength, plaintextLength: body, counter: 1) }
        var packet = sealed
        let perSecond = Bench.rate {
            packet.withUnsafeMutableBytes { p in
                for i in 0..<1_000 {
                    if opening {
                        sealed.withUnsafeBytes { p.copyMemory(from: $0) }
                        Bench.keep(opener.open(p, headerLength: headerLength, counter: 1))
                    } else {
                        Bench.keep(sealer.seal(p, headerLength: headerLength, plaintextLength: body, counter: UInt64(i)))
                    }
                }
            }
            return 1_000
        }
        return 1e9 / perSecond
    }
}
