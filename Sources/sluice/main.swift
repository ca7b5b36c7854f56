// The sluice command: parses arguments, runs one command, maps errors to exit codes.
// Exit codes: 0 success, 1 runtime failure (TUN, netlink, socket), 2 bad usage or configuration.
import CSluiceHostShims
import Glibc
import SluiceConfig
import SluiceLog

// Buffers of 1 MiB and more (a stream's queue at a grown 2 MiB window, a carrier's outbound queue) are
// mmapped and go back to the system when freed. glibc's default raises this threshold to the size of
// the largest block freed so far, after which such buffers come from the heap and stay resident
// after their carrier is gone (test_faults.py measured client and relay keeping megabytes more per
// broken carrier that way). Not lower: at 128 KiB the buffers the data path allocates and frees
// all the time were mmapped too, +10 % CPU per GB (ab.py --tests iperf).
_ = mallopt(M_MMAP_THRESHOLD, 1024 * 1024)

let command: Command
do {
    command = try CommandLineParser.parse(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    fail("\(error)", code: 2)
}

do {
    switch command {
    case .help(let text): print(text)
    case .version: print("sluice \(sluiceVersion) (protocol 1)")
    case .keygen(let config): try Commands.keygen(config)
    case .pubkey: try Commands.pubkey()
    case .relay(let config): try Commands.relay(config)
    case .up(let config):
        keepFreedHeapForLwIP()
        try Commands.up(config)
    case .down(let config): try Commands.down(config)
    case .exec(let config): try AppCommands.exec(config)
    case .cgroup(let config): try AppCommands.cgroup(config)
    case .bench(let config): try BenchCommand.run(config)
    case .socks(let config): try ProxyCommand.run(config)
    case .status(let config): try StatusCommand.run(config)
    }
} catch let error as CommandFailure {
    fail(error.message, code: error.exitCode)
} catch {
    fail("\(error)", code: 1)
}
exit(0)

/// Fixing the mmap threshold (above) also fixes glibc's trim threshold at its 128 KiB default (the
/// two move together only while they are dynamic), so whenever 128 KiB at the top of the heap fell
/// free the heap shrank, and grew again page by page. In the client that is lwIP's segments toward
/// the applications, one malloc each, freed as they are acknowledged: four downloads at once took
/// 13,000 page faults per GB, and 73,000 with 1 MiB send buffers (TCPStack.sendBuffer). Keeping 2 MiB
/// of free heap before trimming brings that to 1,200 (Benchmarks/e2e/reqcpu.py --test iperf-down
/// --streams 4 --syscalls), for up to 2 MiB more resident after a burst. The relay faults 160 times
/// per GB with the default and keeps it.
func keepFreedHeapForLwIP() {
    _ = mallopt(M_TRIM_THRESHOLD, 2 * 1024 * 1024)
}
