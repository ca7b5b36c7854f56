/// What the command line asks for, fully validated. The CLI runs it; errors never get this far.
public enum Command: Sendable, Equatable {
    /// Make a new private key: print it, or write it to a file.
    case keygen(KeygenConfig)
    /// Read a private key on standard input, print its public key.
    case pubkey
    /// Run the relay.
    case relay(RelayConfig)
    /// Bring up the client tunnel.
    case up(ClientConfig)
    /// Take a client tunnel down and remove what it installed.
    case down(DownConfig)
    /// Run a program inside (or, with `--bypass`, outside) a running tunnel.
    case exec(ExecConfig)
    /// Move a running process into or out of a running tunnel's groups.
    case cgroup(CGroupConfig)
    /// Measure throughput to a relay's built-in bench endpoints.
    case bench(BenchConfig)
    /// Run the SOCKS5 and HTTP proxy front-end.
    case socks(ProxyConfig)
    /// Show running tunnels and relays.
    case status(StatusConfig)
    /// Print this usage text to standard output and exit 0.
    case help(String)
    /// Print the version and exit 0.
    case version
}
