/// The `--help` texts, generated from the flag table so that every flag and default is listed.
enum Usage {
    /// `sluice --help`.
    static var main: String {
        let commands = CommandSpec.all.map { ($0.name, $0.summary) } + [("help", "show a command's options: sluice help up")]
        return """
            Usage: sluice <command> [options]

            Commands:
            \(table(commands, indent: 2))

            Options:
            \(table([("-h, --help", "show this help"), ("--version", "print the version")], indent: 2))

            Run `sluice <command> --help` for a command's options; docs/configuration.md describes them all.

            """
    }

    /// `sluice <command> --help`.
    static func text(for command: CommandSpec) -> String {
        let usageLines = command.synopsis.enumerated().map { index, line in
            (index == 0 ? "Usage: " : "       ") + "sluice \(command.name)" + (line.isEmpty ? "" : " \(line)")
        }
        var out = usageLines.joined(separator: "\n") + "\n\n" + command.about + "\n"
        let rows = command.flags.map { flag in (left(flag), right(flag)) }
        out += "\nOptions:\n" + table(rows, indent: 2) + "\n"
        if command.configFileOwner.name != command.name {
            let keys = command.flags.filter(\.inConfigFile).map(\.jsonKey).joined(separator: ", ")
            out += "\n--config reads `sluice \(command.configFileOwner.name)`'s JSON file and takes \(keys) from it; its other keys are ignored.\n"
        } else if command.acceptsConfigFile {
            out += "\nA --config file is a JSON object whose keys are these flag names in camelCase (\"relayPublicKey\").\n"
        }
        return out
    }

    private static func left(_ flag: FlagSpec) -> String {
        let short = flag.shortName.map { "-\($0), " } ?? ""
        return short + "--\(flag.name)" + (flag.takesValue ? " \(flag.placeholder)" : "")
    }

    private static func right(_ flag: FlagSpec) -> String {
        switch flag.presence {
        case .required: return flag.help + " (required)"
        case .atLeastOnce: return flag.help + " (at least one)"
        case .optional(let value?): return flag.help + " (default: \(value))"
        case .optional(nil): return flag.help
        }
    }

    private static func table(_ rows: [(String, String)], indent: Int) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        let pad = String(repeating: " ", count: indent)
        return rows.map { pad + $0.0 + String(repeating: " ", count: width - $0.0.count + 2) + $0.1 }.joined(separator: "\n")
    }
}
