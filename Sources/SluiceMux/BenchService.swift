/// The relay's built-in measurement endpoints (docs/protocol.md §7): an ordinary TCP `OPEN` to the
/// domain `bench.sluice.invalid` reaches them. `.invalid` is a reserved top-level domain that never
/// resolves (RFC 6761), so the name cannot shadow a real host.
///
/// The port numbers are those of the classic services: 9 discard (RFC 863), 19 chargen (RFC 864).
public enum BenchService: UInt16, Sendable, CaseIterable, CustomStringConvertible {
    /// A sink: the relay reads and throws away, returning credit as it consumes.
    case discard = 9
    /// A source: the relay sends bytes as fast as credit and its carrier allow, until the client
    /// sends FIN or RESET.
    case chargen = 19

    /// The name that selects the built-in endpoints instead of a destination.
    public static let hostName = "bench.sluice.invalid"

    /// Whether `destination` names the bench host (any port). Case does not matter and a trailing
    /// dot is allowed, as in DNS.
    public static func isBenchHost(_ destination: Destination) -> Bool {
        guard case .domain(var name) = destination.host else { return false }
        if name.hasSuffix(".") { name.removeLast() }
        return name.lowercased() == hostName
    }

    /// `bench.sluice.invalid:9` or `:19`: what the client opens.
    public var destination: Destination { Destination(host: .domain(Self.hostName), port: rawValue) }

    public var description: String {
        switch self {
        case .discard: return "discard"
        case .chargen: return "chargen"
        }
    }

    // MARK: the bytes a source sends

    /// Bytes in one period of the RFC 864 pattern: 95 lines of 72 printable characters and CR LF,
    /// line `i` starting at character `32 + i % 95`.
    public static let patternPeriod = 95 * 74

    /// Nine periods of the RFC 864 pattern (63,270 bytes), made once. A sender slices it at
    /// `offset % patternPeriod` to continue the pattern without copying, and never needs a slice
    /// longer than eight periods, so every slice lies inside the buffer.
    public static let pattern: [UInt8] = {
        var bytes = [UInt8]()
        bytes.reserveCapacity(9 * patternPeriod)
        for line in 0..<(9 * 95) {
            for column in 0..<72 { bytes.append(UInt8(32 + (line + column) % 95)) }
            bytes.append(13)
            bytes.append(10)
        }
        return bytes
    }()

    /// The longest slice of `pattern` a sender takes at once.
    public static let patternSlice = 8 * patternPeriod
}
