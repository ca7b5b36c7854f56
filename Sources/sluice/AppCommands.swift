import Glibc
import SluiceControl
import SluiceConfig
import SluiceHost
import SluiceLog

/// `sluice exec` and `sluice cgroup`: clients of a running `sluice up`'s control socket.
enum AppCommands {
    /// `sluice exec`: gets a fresh group from `up`, forks, and in the child enters the group (writes
    /// 0 into its cgroup.procs: "this process") before `execvp`, so the program's first instruction
    /// already runs inside it, and every child it starts inherits it. Waits for the program, asks
    /// `up` to remove the group, and exits with the program's status (128+N after signal N).
    static func exec(_ config: ExecConfig) throws {
        let tun = try prepare(config.tun, logLevel: config.logLevel, what: "exec")
        let directory: String
        switch try request(.newGroup(bypass: config.bypass), tun: tun) {
        case .ok(let text): directory = text
        case .error(let message): throw CommandFailure(message: message, exitCode: 1)
        }
        let name = String(directory.split(separator: "/").last ?? "")

        // Everything the child needs is made before fork: after it, only async-signal-safe calls.
        let procs = strdup(directory + "/cgroup.procs")!
        let zero = strdup("0\n")!
        let joinFailed = strdup("sluice exec: cannot enter the tunnel's cgroup; not running the program\n")!
        let execFailed = strdup("sluice exec: cannot run \(config.program[0]): not found or not executable\n")!
        let words: [UnsafeMutablePointer<CChar>?] = config.program.map { strdup($0) } + [nil]
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: words.count)
        argv.initialize(from: words, count: words.count)
        let program = words[0]!

        let child = fork()
        if child == 0 {
            let fd = open(procs, O_WRONLY | O_CLOEXEC)
            if fd < 0 || write(fd, zero, 2) != 2 {
                _ = write(2, joinFailed, strlen(joinFailed))
                _exit(126)
            }
            close(fd)
            execvp(program, argv)
            _ = write(2, execFailed, strlen(execFailed))
            _exit(127)
        }
        guard child > 0 else {
            let e = errno
            _ = try? request(.done(group: name), tun: tun)
            throw CommandFailure(message: "fork: \(String(cString: strerror(e)))", exitCode: 1)
        }
        let status = waitForwardingSignals(child)
        if case .error(let message) = (try? request(.done(group: name), tun: tun)) ?? .ok("") {
            Log.warning(message)
        }
        let signalNumber = status & 0x7f
        exit(signalNumber == 0 ? (status >> 8) & 0xff : 128 + signalNumber)
    }

    /// Waits for `child` and returns its wait status. SIGTERM and SIGHUP sent to `exec` are passed
    /// on to the program; SIGINT and SIGQUIT from the terminal reach the program directly (same
    /// process group), so here they are only kept from ending `exec` before it has cleaned up.
    private static func waitForwardingSignals(_ child: pid_t) -> Int32 {
        var set = sigset_t()
        sigemptyset(&set)
        for signo in [SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGCHLD] { sigaddset(&set, signo) }
        sigprocmask(SIG_BLOCK, &set, nil)
        var status: Int32 = 0
        while true {
            let done = waitpid(child, &status, WNOHANG)
            if done == child || (done < 0 && errno != EINTR) { return status }
            var signo: Int32 = 0
            guard sigwait(&set, &signo) == 0 else { continue }
            if signo == SIGTERM || signo == SIGHUP { kill(child, signo) }
        }
    }

    /// `sluice cgroup add|del PID`.
    static func cgroup(_ config: CGroupConfig) throws {
        let tun = try prepare(config.tun, logLevel: config.logLevel, what: "cgroup")
        let req: ControlRequest = config.action == .add ? .add(pid: config.pid) : .del(pid: config.pid)
        switch try request(req, tun: tun) {
        case .ok(let group): print("process \(config.pid) moved to \(group)")
        case .error(let message): throw CommandFailure(message: message, exitCode: 1)
        }
    }

    /// Log level, root, cgroup v2, and which tunnel.
    private static func prepare(_ tun: String?, logLevel: String, what: String) throws -> String {
        if let level = LogLevel(name: logLevel) { Log.level = level }
        guard getuid() == 0 else {
            throw CommandFailure(message: "sluice \(what) talks to sluice up over its root-only control socket — run it with sudo", exitCode: 1)
        }
        do {
            _ = try CGroupMount.find()
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 1)
        }
        if let tun { return tun }
        var names: [String] = []
        if let dir = opendir(HostState.directory) {
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                // Relays keep their control sockets here too (relay-PORT.sock); tunnels have a state file.
                if name.hasSuffix(".sock"), access(HostState.path(for: String(name.dropLast(5))), F_OK) == 0 {
                    names.append(String(name.dropLast(5)))
                }
            }
        }
        switch names.count {
        case 0: throw CommandFailure(message: "no tunnel is up (no control socket in \(HostState.directory)) — start one with `sluice up`", exitCode: 1)
        case 1: return names[0]
        default: throw CommandFailure(message: "several tunnels are up (\(names.sorted().joined(separator: ", "))); say which with --tun NAME", exitCode: 2)
        }
    }

    private static func request(_ request: ControlRequest, tun: String) throws -> ControlReply {
        do {
            return try ControlClient.send(request, tun: tun)
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 1)
        }
    }
}
