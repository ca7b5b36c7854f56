import SluiceLog
import SluiceWire

/// The client's `info` line about destinations the relay's policy forbids (RESET or DATAGRAM_ERROR
/// `forbidden`, docs/protocol.md §1.1): once per destination and protocol, so an application that
/// retries in a loop writes one line, with at most 256 destinations remembered. The application
/// itself learns at once: ECONNREFUSED for TCP, ICMP "administratively prohibited" for UDP.
/// Loop-confined, like the engine.
struct RefusedDestinations {
    private struct Key: Hashable {
        let destination: SocketEndpoint
        let udp: Bool
    }

    private var logged = OncePerKey<Key>(capacity: 256)

    mutating func note(_ destination: SocketEndpoint, udp: Bool, message: String = "") {
        guard logged.isFirst(Key(destination: destination, udp: udp)) else { return }
        let why = message.isEmpty ? "" : ": \(message)"
        Log.info("\(udp ? "UDP" : "TCP") to \(destination) forbidden by the relay's destination policy\(why)", "tunnel")
    }
}
