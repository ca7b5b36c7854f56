/// Why the TCP stack could not be set up. (On the packet path lwIP's `err_t` results are handled
/// where they occur and counted, never thrown.)
public enum LwIPError: Error, CustomStringConvertible, Sendable, Equatable {
    /// `netif_add` failed: lwIP could not take the accept-any interface.
    case interfaceFailed
    /// `tcp_new`, `tcp_bind` or `tcp_listen` failed for the accept-any listener (`ERR_MEM`, `ERR_USE`).
    case listenerFailed

    public var description: String {
        switch self {
        case .interfaceFailed: return "could not set up the TCP stack: lwIP refused its network interface (netif_add)"
        case .listenerFailed: return "could not set up the TCP stack: lwIP could not listen for new connections (tcp_listen)"
        }
    }
}
