/// The entry point: turns `sluice`'s arguments into a validated `Command`.
///
/// Reads the files the arguments name (`--config`, key files) and nothing else; prints nothing.
/// Problems come back as `ConfigError` (the CLI exits 2); warnings ride inside the configs.
public enum CommandLineParser {
    /// Parses `arguments`, which exclude the program name (`CommandLine.arguments.dropFirst()`).
    ///
    /// `-h`/`--help` anywhere in a command's arguments (before a `--`) wins over every other problem, so
    /// `sluice up --relay --help` shows help rather than an error.
    public static func parse(arguments: [String]) throws(ConfigError) -> Command {
        guard let first = arguments.first else { throw .missingCommand }
        let rest = Array(arguments.dropFirst())
        switch first {
        case "-h", "--help":
            try expectNothing(rest)
            return .help(Usage.main)
        case "--version", "-V":
            try expectNothing(rest)
            return .version
        case "help":
            return try help(for: rest)
        default:
            break
        }
        guard let command = CommandSpec.named(first) else {
            if first.hasPrefix("-") {
                let name = String(first.drop { $0 == "-" })
                throw .unknownFlag(first, command: "", suggestion: Suggestion.closest(to: name, among: ["help", "version"]))
            }
            let names = CommandSpec.all.map(\.name) + ["help"]
            throw .unknownCommand(first, suggestion: Suggestion.closest(to: first, among: names))
        }
        if rest.prefix(while: { $0 != "--" }).contains(where: { $0 == "-h" || $0 == "--help" }) {
            return .help(Usage.text(for: command))
        }
        let (flagArguments, words) = command.splitWords(rest)
        let flags = try ArgumentParser(command: command).parse(flagArguments)
        var file: [String: Settings.Entry] = [:]
        if let path = flags[FlagSpec.config.name]?.last {
            let owner = command.configFileOwner
            file = try ConfigFile.load(path: path, command: owner)
            if owner.name != command.name {
                file = file.filter { command.flag(named: $0.key)?.inConfigFile == true }
            }
        }
        var flagValues = flags
        flagValues[FlagSpec.config.name] = nil
        return try command.build(Settings(command: command, file: file, flags: flagValues)).with(words: words)
    }

    /// The usage text of a command (`nil` for `sluice` itself), for the CLI to print after an error.
    public static func usage(for command: String? = nil) -> String? {
        guard let command else { return Usage.main }
        return CommandSpec.named(command).map(Usage.text(for:))
    }

    /// `sluice help [command]`.
    private static func help(for rest: [String]) throws(ConfigError) -> Command {
        guard let name = rest.first else { return .help(Usage.main) }
        guard let command = CommandSpec.named(name) else {
            throw .unknownCommand(name, suggestion: Suggestion.closest(to: name, among: CommandSpec.all.map(\.name)))
        }
        try expectNothing(Array(rest.dropFirst()))
        return .help(Usage.text(for: command))
    }

    private static func expectNothing(_ rest: [String]) throws(ConfigError) {
        if let extra = rest.first { throw .unexpectedArgument(extra, command: "") }
    }
}
