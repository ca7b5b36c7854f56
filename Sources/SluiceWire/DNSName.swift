/// A domain name as DNS carries it: a sequence of labels of 1 to 63 bytes, at most 255 bytes on the
/// wire (RFC 1035 §2.3.4). Labels are kept with ASCII letters lowered, because names compare without
/// regard to ASCII case (RFC 4343); other bytes, which DNS allows in labels, are kept as they are.
///
/// Split DNS (`--dns-domain`) asks one question of it: `isWithin(_:)`, whether a queried name lies in
/// a configured domain (`www.corp.example` within `corp.example`, and `corp.example` itself).
public struct DNSName: Hashable, Sendable, CustomStringConvertible {
    /// Most bytes a name takes on the wire, length bytes and the final zero included.
    public static let maxWireLength = 255
    /// Most bytes in one label.
    public static let maxLabelLength = 63

    /// The labels, most specific first; none for the root.
    public let labels: [[UInt8]]

    /// A name from labels that the caller has checked (1...63 bytes each, fitting 255 on the wire).
    init(checkedLabels: [[UInt8]]) {
        labels = checkedLabels.map { $0.map(Self.lowered) }
    }

    /// A name written as text: `corp.example` or `corp.example.` (the final dot is optional); `.` is
    /// the root. Nil for an empty label (`a..b`, a leading dot), a label longer than 63 bytes, a name
    /// longer than 255 bytes on the wire, or a byte outside printable ASCII (write IDNs as `xn--`).
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        if bytes == [UInt8(ascii: ".")] {
            self.init(checkedLabels: [])
            return
        }
        var body = bytes[...]
        if body.last == UInt8(ascii: ".") { body = body.dropLast() }
        guard !body.isEmpty, body.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return nil }
        let parts = body.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(Array.init)
        guard parts.allSatisfy({ !$0.isEmpty && $0.count <= Self.maxLabelLength }),
              parts.reduce(1, { $0 + 1 + $1.count }) <= Self.maxWireLength
        else { return nil }
        self.init(checkedLabels: parts)
    }

    /// Whether this name is `domain` or lies below it. Every name lies within the root.
    public func isWithin(_ domain: DNSName) -> Bool {
        labels.count >= domain.labels.count && labels.suffix(domain.labels.count).elementsEqual(domain.labels)
    }

    /// The name as text without the final dot (`www.corp.example`), the root as `.`; a dot, a
    /// backslash or a byte outside printable ASCII inside a label is written as `\DDD` (RFC 1035 §5.1).
    public var description: String {
        guard !labels.isEmpty else { return "." }
        return labels.map { label in
            label.map { byte -> String in
                if byte > 0x20 && byte < 0x7f && byte != UInt8(ascii: ".") && byte != UInt8(ascii: "\\") {
                    return String(UnicodeScalar(byte))
                }
                let digits = String(byte)
                return "\\" + String(repeating: "0", count: 3 - digits.count) + digits
            }.joined()
        }.joined(separator: ".")
    }

    /// The name in wire form, uncompressed: each label after its length byte, then a zero byte.
    public var wireBytes: [UInt8] {
        var bytes: [UInt8] = []
        for label in labels {
            bytes.append(UInt8(label.count))
            bytes += label
        }
        bytes.append(0)
        return bytes
    }

    private static func lowered(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
