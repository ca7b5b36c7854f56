/// ICMP (IPv4) message types and the codes Sluice uses (RFC 792, RFC 1191, RFC 1122 §3.2.2).
public enum ICMPv4Type {
    public static let echoReply: UInt8 = 0
    public static let destinationUnreachable: UInt8 = 3
    public static let sourceQuench: UInt8 = 4
    public static let redirect: UInt8 = 5
    public static let echoRequest: UInt8 = 8
    public static let timeExceeded: UInt8 = 11
    public static let parameterProblem: UInt8 = 12

    /// Destination unreachable codes.
    public enum UnreachableCode {
        public static let network: UInt8 = 0
        public static let host: UInt8 = 1
        public static let `protocol`: UInt8 = 2
        public static let port: UInt8 = 3
        /// Fragmentation needed and DF set; the next-hop MTU is in bytes 6–7 (RFC 1191).
        public static let fragmentationNeeded: UInt8 = 4
        /// Communication administratively prohibited (RFC 1812 §5.2.7.1): a filter refused it.
        public static let administrativelyProhibited: UInt8 = 13
    }

    /// Whether `type` is an error message, which no ICMP error may answer (RFC 1122 §3.2.2):
    /// destination unreachable, source quench, redirect, time exceeded, parameter problem.
    public static func isError(_ type: UInt8) -> Bool {
        switch type {
        case destinationUnreachable, sourceQuench, redirect, timeExceeded, parameterProblem: return true
        default: return false
        }
    }
}

/// ICMPv6 message types and the codes Sluice uses (RFC 4443).
public enum ICMPv6Type {
    public static let destinationUnreachable: UInt8 = 1
    /// The MTU is bytes 4–7.
    public static let packetTooBig: UInt8 = 2
    public static let timeExceeded: UInt8 = 3
    public static let parameterProblem: UInt8 = 4
    public static let echoRequest: UInt8 = 128
    public static let echoReply: UInt8 = 129

    /// Destination unreachable codes.
    public enum UnreachableCode {
        public static let noRoute: UInt8 = 0
        public static let administrativelyProhibited: UInt8 = 1
        public static let address: UInt8 = 3
        public static let port: UInt8 = 4
    }

    /// Error messages are types 0–127, informational ones 128–255 (RFC 4443 §2.1).
    public static func isError(_ type: UInt8) -> Bool { type < 128 }
}
