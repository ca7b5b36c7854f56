/// Splits one command's arguments into flag values, using the command's flag table.
///
/// Accepts `--flag value` and `--flag=value`, and the short alias `-h`. A value-taking flag followed by
/// another flag (`--relay --tun x`) is a missing value, not a value "--tun"; a value that really starts
/// with `--` can be written `--flag=--value`. `--` ends the flags, but no command takes bare words, so
/// anything after it is an unexpected argument. Knows nothing of what the values mean.
struct ArgumentParser {
    let command: CommandSpec

    /// Flag values by flag name (without dashes), in the order given; a switch maps to `[""]`.
    func parse(_ arguments: some Collection<String>) throws(ConfigError) -> [String: [String]] {
        var values: [String: [String]] = [:]
        var rest = arguments[...]
        var flagsEnded = false
        while let token = rest.popFirst() {
            if flagsEnded || token == "-" || !token.hasPrefix("-") {
                throw .unexpectedArgument(token, command: command.name)
            }
            if token == "--" {
                flagsEnded = true
                continue
            }
            let (spec, inlineValue) = try flag(for: token)
            let value: String
            if !spec.takesValue {
                guard inlineValue == nil else { throw .unexpectedValue(flag: spec.name, command: command.name) }
                value = ""
            } else if let inlineValue {
                value = inlineValue
            } else if let next = rest.first, !looksLikeFlag(next) {
                value = next
                rest = rest.dropFirst()
            } else {
                throw .missingValue(flag: spec.name, command: command.name, placeholder: spec.placeholder)
            }
            if values[spec.name] != nil && !spec.repeatable {
                throw .duplicateFlag(flag: spec.name, command: command.name)
            }
            values[spec.name, default: []].append(value)
        }
        return values
    }

    /// The flag a token names, and its `=value` part if any.
    private func flag(for token: String) throws(ConfigError) -> (FlagSpec, String?) {
        guard token.hasPrefix("--") else {
            // "-h", or a one-dash typo such as "-listen".
            let body = token.dropFirst()
            if body.count == 1, let spec = command.flag(short: body.first!) { return (spec, nil) }
            throw unknown(String(body), typed: token)
        }
        let body = token.dropFirst(2)
        let name: String, inlineValue: String?
        if let equals = body.firstIndex(of: "=") {
            name = String(body[..<equals])
            inlineValue = String(body[body.index(after: equals)...])
        } else {
            name = String(body)
            inlineValue = nil
        }
        guard let spec = command.flag(named: name) else { throw unknown(name, typed: token) }
        return (spec, inlineValue)
    }

    private func unknown(_ name: String, typed: String) -> ConfigError {
        if let suggestion = Suggestion.closest(to: name, among: command.flags.map(\.name)) {
            return .unknownFlag(typed, command: command.name, suggestion: suggestion)
        }
        if let owner = CommandSpec.all.first(where: { $0.name != command.name && $0.flag(named: name) != nil }) {
            return .flagOfOtherCommand(name, command: command.name, owner: owner.name)
        }
        return .unknownFlag(typed, command: command.name, suggestion: nil)
    }

    private func looksLikeFlag(_ token: String) -> Bool {
        (token.hasPrefix("--") && token.count > 2) || token == "-h"
    }
}
