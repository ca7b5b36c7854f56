import SluiceJSON

private extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}

/// Loads one command's settings from a JSON config file.
///
/// Keys are the command's flag names in camelCase; repeatable flags are arrays of strings; numbers are
/// JSON numbers (`fwmark` may also be a string such as "0x534c"). Key-file paths that are relative
/// resolve against the config file's directory, so a config and its keys can move together. The
/// values come back as raw text with their origin, and go through the same checks as flag values.
enum ConfigFile {
    /// Largest config file read; a real one is well under a kilobyte.
    static let sizeLimit = 1 << 20

    /// The file's settings keyed by flag name.
    static func load(path: String, command: CommandSpec) throws(ConfigError) -> [String: Settings.Entry] {
        let object = try parse(path: path)
        var entries: [String: Settings.Entry] = [:]
        for key in object.keys.sorted() {
            guard let flag = command.flag(jsonKey: key) else { throw unknownKey(key, path: path, command: command) }
            if flag.kind == .switch {
                // A switch is a JSON boolean: true turns it on, false leaves it as if absent.
                guard case .bool(let on) = object[key]! else {
                    throw .wrongType(path: path, key: key, expected: "true or false", got: typeName(object[key]!))
                }
                if on { entries[flag.name] = Settings.Entry(values: [""], origins: [.file(path: path, key: key, index: nil)]) }
                continue
            }
            entries[flag.name] = try entry(object[key]!, key: key, flag: flag, path: path)
        }
        return entries
    }

    private static func parse(path: String) throws(ConfigError) -> [String: JSONValue] {
        let contents: SmallFile.Contents
        do {
            contents = try SmallFile.read(path, limit: sizeLimit)
        } catch {
            throw .configFileUnreadable(path: path, reason: error.reason)
        }
        guard contents.bytes.contains(where: { !" \t\r\n".utf8.contains($0) }) else {
            throw .configFileInvalidJSON(path: path, detail: "the file is empty")
        }
        let json: JSONValue
        do {
            json = try JSONParser.parse(contents.bytes)
        } catch {
            throw .configFileInvalidJSON(path: path, detail: error.description)
        }
        guard case .object(let object) = json else {
            throw .configFileNotObject(path: path, got: typeName(json))
        }
        return object
    }

    private static func entry(_ value: JSONValue, key: String, flag: FlagSpec, path: String) throws(ConfigError) -> Settings.Entry {
        if flag.kind == .relay { return try relays(value, key: key, path: path) }
        if flag.repeatable {
            guard case .array(let array) = value else {
                throw .wrongType(path: path, key: key, expected: "an array of strings", got: typeName(value))
            }
            var texts: [String] = []
            for (index, element) in array.enumerated() {
                guard case .string(let text) = element else {
                    throw .wrongElementType(path: path, key: key, index: index, expected: "a string", got: typeName(element))
                }
                texts.append(text)
            }
            return Settings.Entry(values: texts, origins: texts.indices.map { .file(path: path, key: key, index: $0) })
        }
        let text = try scalarText(value, key: key, kind: flag.kind, path: path)
        return Settings.Entry(values: [text], origins: [.file(path: path, key: key, index: nil)])
    }

    /// `relays`: an array of `{"endpoint": "10.10.0.2:7000", "publicKey": "…"}`, each as the text
    /// `--relays` carries (`ENDPOINT,KEY`), to go through the same checks.
    private static func relays(_ value: JSONValue, key: String, path: String) throws(ConfigError) -> Settings.Entry {
        let expected = "an object {\"endpoint\": \"10.10.0.2:7000\", \"publicKey\": \"…\"}"
        guard case .array(let array) = value else {
            throw .wrongType(path: path, key: key, expected: "an array of objects with \"endpoint\" and \"publicKey\"", got: typeName(value))
        }
        var texts: [String] = []
        for (index, element) in array.enumerated() {
            guard case .object(let fields) = element, fields.count == 2, case .string(let endpoint)? = fields["endpoint"],
                  case .string(let publicKey)? = fields["publicKey"] else {
                let got = if case .object(let fields) = element {
                    "an object with " + (fields.keys.sorted().map { "\"\($0)\"" }.joined(separator: ", ").nonEmpty ?? "no keys")
                } else { typeName(element) }
                throw .wrongElementType(path: path, key: key, index: index, expected: expected, got: got)
            }
            texts.append(endpoint + "," + publicKey)
        }
        return Settings.Entry(values: texts, origins: texts.indices.map { .file(path: path, key: key, index: $0) })
    }

    /// The value as the text a flag would carry.
    private static func scalarText(_ value: JSONValue, key: String, kind: FlagSpec.Kind, path: String) throws(ConfigError) -> String {
        switch kind {
        case .text, .switch, .relay:  // switches are booleans and relays objects, handled before this
            guard case .string(let text) = value else { throw .wrongType(path: path, key: key, expected: "a string", got: typeName(value)) }
            return text
        case .path:
            guard case .string(let text) = value else { throw .wrongType(path: path, key: key, expected: "a string", got: typeName(value)) }
            return resolve(text, against: path)
        case .integer, .seconds:
            guard case .number(let number) = value else { throw .wrongType(path: path, key: key, expected: "a number", got: typeName(value)) }
            return numberText(number)
        case .integerOrHex:
            if case .string(let text) = value { return text }
            guard case .number(let number) = value else {
                throw .wrongType(path: path, key: key, expected: "a number or a string such as \"0x534c\"", got: typeName(value))
            }
            return numberText(number)
        }
    }

    /// The number as the text a flag would carry, for the shared checks to accept or refuse: whole
    /// numbers plainly ("1400" also for `1400.0` or `1.4e3`), others in Swift's shortest form ("2.5"),
    /// and numbers no double holds (`1e400`) or too long to be exact as written, so that the error
    /// quotes what the user wrote.
    static func numberText(_ number: JSONNumber) -> String {
        if let integer = number.integer(as: Int64.self) { return String(integer) }
        guard number.isIntegerLiteral == false, let double = number.double else { return number.text }
        if double == double.rounded(), abs(double) < 9e15 { return String(Int64(double)) }
        return String(double)
    }

    /// `relative` joined to the directory of `configPath`; absolute paths stay as they are.
    static func resolve(_ relative: String, against configPath: String) -> String {
        guard !relative.hasPrefix("/"), !relative.isEmpty, let slash = configPath.lastIndex(of: "/") else { return relative }
        return String(configPath[...slash]) + relative
    }

    private static func unknownKey(_ key: String, path: String, command: CommandSpec) -> ConfigError {
        let known = command.flags.filter(\.inConfigFile).map(\.jsonKey)
        if let suggestion = Suggestion.closest(to: key, among: known) {
            return .unknownKey(path: path, key: key, suggestion: suggestion)
        }
        if let owner = CommandSpec.all.first(where: { $0.name != command.name && $0.flag(jsonKey: key) != nil }) {
            return .keyOfOtherCommand(path: path, key: key, command: command.name, owner: owner.name)
        }
        return .unknownKey(path: path, key: key, suggestion: nil)
    }

    /// The kind of a JSON value, as error messages name it.
    static func typeName(_ value: JSONValue) -> String {
        value == .null ? "null (leave the key out instead)" : value.kindName
    }
}
