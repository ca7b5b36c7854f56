// The sluice command: parses arguments, runs one command, maps errors to exit codes.
// Exit codes: 0 success, 1 runtime failure (TUN, netlink, socket), 2 bad usage or configuration.
import Glibc
import SluiceConfig
import SluiceLog


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
    case .up(let config): try Commands.up(config)
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
