import Glibc
import SluiceWire

extension IPPrefix {
    /// The prefix with its host bits cleared (`10.20.0.1/24` → `10.20.0.0/24`): the kernel rejects
    /// routes whose destination has host bits set (`Invalid prefix for given prefix length`).
    var network: IPPrefix {
        var bytes = address.bytes
        var bits = length
        for i in bytes.indices {
            let keep = min(8, max(0, bits))
            bytes[i] &= keep == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - keep))
            bits -= 8
        }
        return IPPrefix(address: IPAddress(bytes: bytes), length: length)!
    }
}

extension IPAddress {
    /// `AF_INET` or `AF_INET6`, as netlink's family headers want it.
    var addressFamily: UInt8 { UInt8(isIPv4 ? AF_INET : AF_INET6) }
}
