import Glibc
import SluiceWire

/// A UDP socket bound to an ephemeral port on 127.0.0.1, non-blocking, for a test to send to and read
/// from with Glibc's calls; the caller closes it.
func loopbackUDPSocket() -> (fd: Int32, endpoint: SocketEndpoint) {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    precondition(fd >= 0, "socket(UDP)")
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    precondition(bound, "bind(127.0.0.1:0)")
    return (fd, SocketEndpoint(address: IPAddress("127.0.0.1")!, port: UInt16(bigEndian: address.sin_port)))
}
