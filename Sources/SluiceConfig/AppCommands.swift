/// Validated settings of `sluice exec`: `[--tun NAME] [--bypass] -- PROGRAM [ARGS...]`.
public struct ExecConfig: Sendable, Equatable {
    /// The tunnel (`--tun`), or nil for "the only one recorded".
    public let tun: String?
    /// Keep the program out of a `--route-all` tunnel instead of sending it through.
    public let bypass: Bool
    /// The program and its arguments, as given after `--`; never empty once built.
    public var program: [String]
    public let logLevel: String

    public init(tun: String?, bypass: Bool, program: [String], logLevel: String = "info") {
        self.tun = tun
        self.bypass = bypass
        self.program = program
        self.logLevel = logLevel
    }

    init(settings: Settings) throws(ConfigError) {
        self.init(tun: try settings.optionalInterfaceName("tun"),
                  bypass: settings.switchOn("bypass") != nil, program: [], logLevel: try settings.logLevel())
    }

    static let usage = "[--tun NAME] [--bypass] -- PROGRAM [ARGS...]"
}

/// Validated settings of `sluice cgroup add|del PID [--tun NAME]`.
public struct CGroupConfig: Sendable, Equatable {
    public enum Action: String, Sendable, Equatable {
        case add, del
    }

    public let tun: String?
    public var action: Action
    public var pid: Int32
    public let logLevel: String

    public init(tun: String?, action: Action, pid: Int32, logLevel: String = "info") {
        self.tun = tun
        self.action = action
        self.pid = pid
        self.logLevel = logLevel
    }

    init(settings: Settings) throws(ConfigError) {
        self.init(tun: try settings.optionalInterfaceName("tun"),
                  action: .add, pid: 0, logLevel: try settings.logLevel())
    }

    static let usage = "add|del PID [--tun NAME]"
}

extension CommandSpec {
    static let exec = CommandSpec(
        name: "exec", summary: "run a program through a running tunnel (or, with --bypass, around a --route-all one)",
        synopsis: [ExecConfig.usage],
        about: "Asks the running `sluice up` for a cgroup of its own, enters it before the program starts (children inherit it), "
            + "and removes it when the program exits. Without --route-all only such programs use the tunnel.",
        flags: [
            FlagSpec("tun", "NAME", help: "the tunnel's TUN device; may be left out when only one tunnel is recorded"),
            FlagSpec("bypass", kind: .switch, help: "keep the program out of a --route-all tunnel instead"),
            .logLevel,
            .help,
        ],
        build: { settings throws(ConfigError) in .exec(try ExecConfig(settings: settings)) })

    static let cgroup = CommandSpec(
        name: "cgroup", summary: "move a running process into a running tunnel's group, or out of it",
        synopsis: [CGroupConfig.usage],
        about: "`add PID` moves the process into the tunnel's group: its next connections take the tunnel (or, with --route-all, "
            + "bypass it). `del PID` moves it back where it was. Connections already open keep their path.",
        flags: [
            FlagSpec("tun", "NAME", help: "the tunnel's TUN device; may be left out when only one tunnel is recorded"),
            .logLevel,
            .help,
        ],
        build: { settings throws(ConfigError) in .cgroup(try CGroupConfig(settings: settings)) })

    /// The command's words apart from its flags: for `exec` everything after `--`, for `cgroup`
    /// the leading words (`add 1234`). Other commands take no words.
    func splitWords(_ arguments: [String]) -> (flags: [String], words: [String]) {
        switch name {
        case "exec":
            guard let dashes = arguments.firstIndex(of: "--") else { return (arguments, []) }
            return (Array(arguments[..<dashes]), Array(arguments[(dashes + 1)...]))
        case "cgroup":
            let words = Array(arguments.prefix { !$0.hasPrefix("-") })
            return (Array(arguments.dropFirst(words.count)), words)
        default:
            return (arguments, [])
        }
    }
}

extension Command {
    /// The command with its words (`CommandSpec.splitWords`) checked and filled in.
    func with(words: [String]) throws(ConfigError) -> Command {
        switch self {
        case .exec(var config):
            guard !words.isEmpty, !words[0].isEmpty else {
                throw .badArguments(command: "exec", problem: "no program given after --", usage: ExecConfig.usage)
            }
            config.program = words
            return .exec(config)
        case .cgroup(var config):
            guard words.count == 2, let action = CGroupConfig.Action(rawValue: words[0]) else {
                throw .badArguments(command: "cgroup", problem: words.isEmpty ? "say add or del and a process id" : "expected add or del and one process id, got \"\(words.joined(separator: " "))\"", usage: CGroupConfig.usage)
            }
            guard let pid = Int32(words[1]), pid > 0 else {
                throw .badArguments(command: "cgroup", problem: "\"\(words[1])\" is not a process id", usage: CGroupConfig.usage)
            }
            config.action = action
            config.pid = pid
            return .cgroup(config)
        default:
            if let extra = words.first { throw .unexpectedArgument(extra, command: "") }
            return self
        }
    }
}
