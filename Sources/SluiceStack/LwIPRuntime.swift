import CLwIP

/// lwIP's global state, initialised once per process without the tcpip thread: the Debian build has
/// NO_SYS=0, but `lwip_init()` plus `sys_check_timeouts()` lets one thread own lwIP alone.
enum LwIPRuntime {
    nonisolated(unsafe) private static var initialized = false

    /// Call on the stack thread before anything else touches lwIP.
    static func initializeOnce() {
        guard !initialized else { return }
        lwip_init()
        initialized = true
    }
}
