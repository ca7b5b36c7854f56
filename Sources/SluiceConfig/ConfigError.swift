/// Everything that can be wrong with a command line, a JSON config file or a key file.
///
/// Each case renders (`description`) as one sentence that names the flag, key or file at fault and says
/// what would be right. The CLI prints it and exits with status 2.
public enum ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `sluice` was run with no command.
    case missingCommand
    /// The first argument is not a command; `suggestion` is the closest command name, if any is close.
    case unknownCommand(String, suggestion: String?)
    /// `flag` (as typed) is not an option of `command` ("" for `sluice` itself); `suggestion` is the
    /// closest flag name, if close.
    case unknownFlag(String, command: String, suggestion: String?)
    /// `flag` is an option of `owner`, not of `command` (`sluice relay --route …`).
    case flagOfOtherCommand(String, command: String, owner: String)
    /// A flag that takes a value was last on the line, or followed by another flag.
    case missingValue(flag: String, command: String, placeholder: String)
    /// A switch such as `--help` was given `=value`.
    case unexpectedValue(flag: String, command: String)
    /// A flag that may appear once appeared again.
    case duplicateFlag(flag: String, command: String)
    /// A bare word where only flags are accepted; `command` is "" for `sluice` itself.
    case unexpectedArgument(String, command: String)
    /// A command's words are missing or wrong (`sluice exec` without a program, `sluice cgroup`
    /// without `add PID`); `usage` shows the right form.
    case badArguments(command: String, problem: String, usage: String)
    /// A required setting is absent from both the command line and the config file.
    case missingSetting(flag: String, key: String, command: String)
    /// A value has the wrong form; `expected` describes the right one ("an IP endpoint such as …").
    case invalidValue(SettingOrigin, value: String, expected: String)
    /// A number outside its range; `allowed` reads like "1280 to 65535".
    case outOfRange(SettingOrigin, value: String, allowed: String)
    /// A route prefix with bits set beyond its length; `suggestion` is the masked prefix.
    case routeHasHostBits(SettingOrigin, value: String, suggestion: String)
    /// Key text that does not decode to a key. `source` reads like "--allow-client" or
    /// "private key file client.key".
    case invalidKey(source: String, problem: KeyProblem)
    /// A flag that takes key text was given the name of an existing file.
    case keyGivenAsFileName(SettingOrigin, path: String)
    /// A key file could not be read; `what` is "private key file" or "pre-shared key file".
    case keyFileUnreadable(what: String, path: String, reason: String)
    /// The config file could not be read.
    case configFileUnreadable(path: String, reason: String)
    /// The config file is not JSON; `detail` says where, when the parser told.
    case configFileInvalidJSON(path: String, detail: String)
    /// The config file's top level is not an object; `got` reads like "an array".
    case configFileNotObject(path: String, got: String)
    /// A key no setting has; `suggestion` is the closest key, if close.
    case unknownKey(path: String, key: String, suggestion: String?)
    /// A key that belongs to another command's config (a relay config given to `up`).
    case keyOfOtherCommand(path: String, key: String, command: String, owner: String)
    /// A key's value has the wrong JSON type.
    case wrongType(path: String, key: String, expected: String, got: String)
    /// An element (0-based `index`) of an array key has the wrong JSON type.
    case wrongElementType(path: String, key: String, index: Int, expected: String, got: String)
    /// `--route-all` without a `--dns` resolver: the host's DNS could not follow the tunnel.
    case routeAllNeedsDNS(SettingOrigin)
    /// An IPv6 value (address, route, exclude, resolver) together with `--no-ipv6` (`blocker`).
    case ipv6WhileBlocked(SettingOrigin, value: String, blocker: SettingOrigin)
    /// A `--dns` resolver inside an `--exclude` prefix: its queries would leave outside the tunnel.
    case dnsInsideExclude(SettingOrigin, value: String, exclude: SettingOrigin, prefix: String)
    /// A setting that only means something together with `needs` (`--route-local` without `--route-all`).
    case needsCompanion(SettingOrigin, needs: String)
    /// Two settings that exclude each other (`--json` with `--watch`).
    case conflicting(SettingOrigin, SettingOrigin)
    /// `sluice up` with neither a relay (`--relay`…) nor a SOCKS5 server (`--upstream`).
    case missingUpstream(command: String)
    /// `sluice socks --listen` on an address other than loopback with no `--auth-file`.
    case openProxy(SettingOrigin, value: String)
    /// An `--auth-file` line that is not `user:password` (1 to 255 bytes each); `line` nil: no user at all.
    case badAuthFile(path: String, line: Int?)
    /// A `--deny-destination` prefix that `other` (an `--allow-destination`) allows as well.
    case allowedAndDenied(SettingOrigin, value: String, other: SettingOrigin)

    public var description: String {
        switch self {
        case .missingCommand:
            return "sluice needs a command (keygen, pubkey, relay, up, down, status…); run `sluice --help` for the list."
        case .unknownCommand(let name, let suggestion):
            return "sluice has no command \"\(name)\"" + ending(suggestion.map { "\"\($0)\"" }, otherwise: "run `sluice --help` for the list")
        case .unknownFlag(let flag, let command, let suggestion):
            return "\(program(command)) has no option \(flag)" + ending(suggestion.map { "--" + $0 }, otherwise: "run `\(program(command)) --help` for its options")
        case .flagOfOtherCommand(let flag, let command, let owner):
            return "sluice \(command) does not take --\(flag); that option belongs to `sluice \(owner)`."
        case .missingValue(let flag, let command, let placeholder):
            return "sluice \(command): --\(flag) needs a value, as in --\(flag) \(placeholder) (or --\(flag)=\(placeholder) if the value starts with '-')."
        case .unexpectedValue(let flag, let command):
            return "sluice \(command): --\(flag) takes no value; give it alone."
        case .duplicateFlag(let flag, let command):
            return "sluice \(command): --\(flag) is given more than once; give it once."
        case .unexpectedArgument(let argument, let command):
            return "\(program(command)) does not take the argument \"\(argument)\"; settings are given as --flag value (see `\(program(command)) --help`)."
        case .badArguments(let command, let problem, let usage):
            return "sluice \(command): \(problem); usage: sluice \(command) \(usage)"
        case .missingSetting(let flag, let key, let command):
            return "sluice \(command) needs --\(flag) (or \"\(key)\" in the --config file)."
        case .invalidValue(let origin, let value, let expected):
            return "\(origin) \(shown(value, origin)) is not \(expected)."
        case .outOfRange(let origin, let value, let allowed):
            return "\(origin) \(shown(value, origin)) is out of range; use \(allowed)."
        case .routeHasHostBits(let origin, let value, let suggestion):
            return "\(origin) \(shown(value, origin)) has bits set beyond its prefix length; did you mean \(suggestion)?"
        case .invalidKey(let source, let problem):
            switch problem {
            case .notBase64(let reason): return "\(source) is not base64: \(reason)."
            case .wrongLength(let count): return "\(source) decodes to \(count) bytes, a key is 32; check that the whole key was copied."
            case .empty: return "\(source) is empty; it should hold a base64 key such as `sluice keygen` prints."
            case .allZero: return "\(source) is all zeros, which is not a usable public key; check that the right key was copied."
            }
        case .keyGivenAsFileName(let origin, let path):
            return "\(origin) takes the base64 key text itself, but \"\(path)\" names a file; pass its contents instead, as in \(origin) \"$(cat \(path))\"."
        case .keyFileUnreadable(let what, let path, let reason):
            return "\(what) \(path): \(reason)."
        case .configFileUnreadable(let path, let reason):
            return "config file \(path): \(reason)."
        case .configFileInvalidJSON(let path, let detail):
            return "\(path) is not valid JSON: \(detail)."
        case .configFileNotObject(let path, let got):
            return "\(path) must hold a JSON object ({ \"key\": value, … }) at the top level, got \(got)."
        case .unknownKey(let path, let key, let suggestion):
            return "\(path): unknown key \"\(key)\"" + ending(suggestion.map { "\"\($0)\"" }, otherwise: "docs/configuration.md lists the keys")
        case .keyOfOtherCommand(let path, let key, let command, let owner):
            return "\(path): key \"\(key)\" is a `sluice \(owner)` setting, not a `sluice \(command)` one; is this the right config file?"
        case .wrongType(let path, let key, let expected, let got):
            return "\(path): key \"\(key)\" must be \(expected), got \(got)."
        case .wrongElementType(let path, let key, let index, let expected, let got):
            return "\(path): key \"\(key)\" element \(index + 1) must be \(expected), got \(got)."
        case .routeAllNeedsDNS(let origin):
            return "\(origin) needs at least one --dns resolver (reached through the relay) so that DNS follows the tunnel, such as --dns 9.9.9.9."
        case .ipv6WhileBlocked(let origin, let value, let blocker):
            return "\(origin) \(shown(value, origin)) is IPv6, but \(blocker) blocks IPv6 while the tunnel is up; drop one of the two."
        case .dnsInsideExclude(let origin, let value, let exclude, let prefix):
            return "\(origin) \(shown(value, origin)) lies inside \(exclude) \(prefix), so DNS would leave outside the tunnel; pick a resolver outside the excluded prefixes."
        case .needsCompanion(let origin, let needs):
            return "\(origin) only applies together with \(needs); add \(needs) or leave it out."
        case .conflicting(let first, let second):
            return "\(first) and \(second) cannot be given together; choose one."
        case .missingUpstream(let command):
            return "sluice \(command) needs a way out: --relay ENDPOINT with --relay-public-key and --private-key (a Sluice relay), "
                + "--relays ENDPOINT,KEY (one per relay) with --private-key, or --upstream socks5://HOST:PORT (a SOCKS5 server); "
                + "or \"relay\", \"relays\" or \"upstream\" in the --config file."
        case .badAuthFile(let path, let line?):
            return "auth file \(path) line \(line) is not user:password (each 1 to 255 bytes; # starts a comment)."
        case .badAuthFile(let path, nil):
            return "auth file \(path) holds no user:password line."
        case .openProxy(let origin, let value):
            return "\(origin) \(shown(value, origin)) is not a loopback address, and without --auth-file anyone who reaches it could use "
                + "the relay; add --auth-file FILE (user:password lines) or listen on 127.0.0.1 or [::1]."
        case .allowedAndDenied(let origin, let value, let other):
            return "\(origin) \(shown(value, origin)) is allowed by \(other) as well; keep the prefix in one of the two lists."
        }
    }

    /// "sluice up", or "sluice" for the program itself.
    private func program(_ command: String) -> String {
        command.isEmpty ? "sluice" : "sluice \(command)"
    }

    /// " — did you mean X?" when there is a close match, else "; <advice>."
    private func ending(_ suggestion: String?, otherwise advice: String) -> String {
        guard let suggestion else { return "; \(advice)." }
        return " — did you mean \(suggestion)?"
    }

    /// Flag values are shown as typed (`--mtu 99999`); file values after an equals sign.
    private func shown(_ value: String, _ origin: SettingOrigin) -> String {
        let text = value.isEmpty || value.contains(" ") ? "\"\(value)\"" : value
        if case .flag = origin { return text }
        return "= \(text)"
    }
}
