import SluiceMux

/// The engine's own counters (lwIP's, the reassembler's, the UDP forwarder's and the output's
/// live with them). Every one is shown in `TunnelStatistics`: a counter exists to be read.
struct EngineCounters {
    /// Packets and bytes read from the packet flow.
    var packetsIn = 0
    var bytesIn = 0
    /// Dropped: did not parse, or a partial checksum pointing outside the packet.
    var malformed = 0
    /// Dropped: an IP protocol other than TCP, UDP and ICMP.
    var unsupportedProtocol = 0
    /// Dropped: ICMP other than echo requests.
    var icmpNotEcho = 0
    /// Dropped: addressed to a loopback address.
    var loopback = 0
    /// Echo requests answered.
    var echoReplies = 0
    /// Datagrams or echo replies toward the applications written as fragments.
    var fragmentedReplies = 0
    /// Dropped: a reply that could not be encoded as a UDP packet.
    var udpUnencodable = 0
    /// TCP SYNs answered with RST because no carrier was up.
    var tcpRefusedNoCarrier = 0
    /// TCP flows the relay refused (RESET before OPEN_OK), by reason.
    var tcpRefusedByRelay: [ResetReason: Int] = [:]
    /// TCP and UDP payload bytes carried each way (application → relay is up).
    var tcpBytesUp = 0
    var tcpBytesDown = 0
}
