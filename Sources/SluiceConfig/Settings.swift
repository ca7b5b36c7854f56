/// One command's settings as raw text, before validation: the config file's values with the command
/// line's laid over them. A flag given on the command line replaces the file's value for that key
/// entirely; for repeatable flags, the file's whole list.
struct Settings {
    /// A setting's raw values and where each came from.
    struct Entry {
        let values: [String]
        let origins: [SettingOrigin]

        init(values: [String], origins: [SettingOrigin]) {
            precondition(values.count == origins.count)
            self.values = values
            self.origins = origins
        }

        init(flag name: String, values: [String]) {
            self.init(values: values, origins: values.map { _ in .flag(name) })
        }
    }

    let command: CommandSpec
    private let entries: [String: Entry]

    /// `file` is keyed by flag name, as `ConfigFile.load` returns it.
    init(command: CommandSpec, file: [String: Entry] = [:], flags: [String: [String]]) {
        var merged = file
        for (name, values) in flags { merged[name] = Entry(flag: name, values: values) }
        self.command = command
        self.entries = merged
    }

    /// Every value of a flag, with its origin; empty when not given.
    func all(_ flag: String) -> [(text: String, origin: SettingOrigin)] {
        assert(command.flag(named: flag) != nil, "\(flag) is not in the flag table of \(command.name)")
        guard let entry = entries[flag] else { return [] }
        return Array(zip(entry.values, entry.origins))
    }

    /// The value of a non-repeatable flag, if given.
    func value(_ flag: String) -> (text: String, origin: SettingOrigin)? {
        all(flag).last
    }

    /// The value of a flag that must be given.
    func required(_ flag: String) throws(ConfigError) -> (text: String, origin: SettingOrigin) {
        guard let value = value(flag) else { throw missing(flag) }
        return value
    }

    /// Every value of a repeatable flag that must be given at least once.
    func requiredAll(_ flag: String) throws(ConfigError) -> [(text: String, origin: SettingOrigin)] {
        let values = all(flag)
        guard !values.isEmpty else { throw missing(flag) }
        return values
    }

    private func missing(_ flag: String) -> ConfigError {
        .missingSetting(flag: flag, key: command.flag(named: flag)?.jsonKey ?? flag, command: command.name)
    }
}
