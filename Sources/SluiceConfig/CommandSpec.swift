/// One `sluice` command: its name, its flags, and how its validated settings become a `Command`.
///
/// Adding a command (`down`, `exec`, `bench`) is one entry in `CommandSpec+Table.swift` plus a case in
/// `Command`; parsing, JSON loading, suggestions and usage text come from the entry.
struct CommandSpec: Sendable {
    let name: String
    /// One line for `sluice --help`.
    let summary: String
    /// Usage lines after "Usage: ", without the leading "sluice <name> " (may be empty).
    let synopsis: [String]
    /// A sentence or two under the usage lines.
    let about: String
    let flags: [FlagSpec]
    /// Turns the merged, not yet validated settings into the command; validation happens here.
    let build: @Sendable (Settings) throws(ConfigError) -> Command

    func flag(named name: String) -> FlagSpec? {
        flags.first { $0.name == name }
    }

    func flag(short: Character) -> FlagSpec? {
        flags.first { $0.shortName == short }
    }

    func flag(jsonKey key: String) -> FlagSpec? {
        flags.first { $0.inConfigFile && $0.jsonKey == key }
    }

    /// Whether the command takes `--config FILE`.
    var acceptsConfigFile: Bool { flag(named: FlagSpec.config.name) != nil }

    /// The command whose JSON file `--config` reads, when it is another's: `bench` reads `up`'s
    /// client file, takes the keys it shares with it, and ignores the rest (see `CommandLineParser`).
    var configFileOwner: CommandSpec { name == "bench" ? .up : self }

    /// Every command, in the order `sluice --help` lists them.
    static let all: [CommandSpec] = [.keygen, .pubkey, .relay, .up, .down, .status, .exec, .cgroup, .bench, .socks]

    static func named(_ name: String) -> CommandSpec? {
        all.first { $0.name == name }
    }
}
