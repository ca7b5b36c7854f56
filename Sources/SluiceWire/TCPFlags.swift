/// The TCP control bits (byte 13 of the header; the obsolete NS bit is not included).
public struct TCPFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8

    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let fin = TCPFlags(rawValue: 0x01)
    public static let syn = TCPFlags(rawValue: 0x02)
    public static let rst = TCPFlags(rawValue: 0x04)
    public static let psh = TCPFlags(rawValue: 0x08)
    public static let ack = TCPFlags(rawValue: 0x10)
    public static let urg = TCPFlags(rawValue: 0x20)
    /// ECN-Echo (RFC 3168).
    public static let ece = TCPFlags(rawValue: 0x40)
    /// Congestion Window Reduced (RFC 3168).
    public static let cwr = TCPFlags(rawValue: 0x80)

    /// Names of the set bits, e.g. `SYN|ACK`, or `none`.
    public var description: String {
        let names = ["FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"]
        let set = (0..<8).filter { rawValue & (1 << $0) != 0 }.map { names[$0] }
        return set.isEmpty ? "none" : set.joined(separator: "|")
    }
}
