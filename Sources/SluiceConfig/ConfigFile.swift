import Foundation

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
                guard let on = boolean(object[key]!) else {
                    throw .wrongType(path: path, key: key, expected: "true or false", got: typeName(object[key]!))
                }
                if on { entries[flag.name] = Settings.Entry(values: [""], origins: [.file(path: path, key: key, index: nil)]) }
                continue
            }
            entries[flag.name] = try entry(object[key]!, key: key, flag: flag, path: path)
        }
        return entries
    }

    private static func parse(path: String) throws(ConfigError) -> [String: Any] {
        let contents: SmallFile.Contents
        do {
            contents = try SmallFile.read(path, limit: sizeLimit)
        } catch {
            throw .configFileUnreadable(path: path, reason: error.reason)
        }
        guard contents.bytes.contains(where: { !" \t\r\n".utf8.contains($0) }) else {
            throw .configFileInvalidJSON(path: path, detail: "the file is empty")
        }
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: Data(contents.bytes), options: [.fragmentsAllowed])
        } catch {
            throw .configFileInvalidJSON(path: path, detail: describe(error, in: contents.bytes))
        }
        guard let object = json as? [String: Any] else {
            throw .configFileNotObject(path: path, got: typeName(json))
        }
        return object
    }

    private static func entry(_ value: Any, key: String, flag: FlagSpec, path: String) throws(ConfigError) -> Settings.Entry {
        if flag.repeatable {
            guard let array = value as? [Any] else {
                throw .wrongType(path: path, key: key, expected: "an array of strings", got: typeName(value))
            }
            var texts: [String] = []
            for (index, element) in array.enumerated() {
                guard let text = element as? String else {
                    throw .wrongElementType(path: path, key: key, index: index, expected: "a string", got: typeName(element))
                }
                texts.append(text)
            }
            return Settings.Entry(values: texts, origins: texts.indices.map { .file(path: path, key: key, index: $0) })
        }
        let text = try scalarText(value, key: key, kind: flag.kind, path: path)
        return Settings.Entry(values: [text], origins: [.file(path: path, key: key, index: nil)])
    }

    /// The value as the text a flag would carry.
    private static func scalarText(_ value: Any, key: String, kind: FlagSpec.Kind, path: String) throws(ConfigError) -> String {
        switch kind {
        case .text, .switch:  // switches are handled as booleans before this
            guard let text = value as? String else { throw .wrongType(path: path, key: key, expected: "a string", got: typeName(value)) }
            return text
        case .path:
            guard let text = value as? String else { throw .wrongType(path: path, key: key, expected: "a string", got: typeName(value)) }
            return resolve(text, against: path)
        case .integer, .seconds:
            guard let number = number(value) else { throw .wrongType(path: path, key: key, expected: "a number", got: typeName(value)) }
            return numberText(number)
        case .integerOrHex:
            if let text = value as? String { return text }
            guard let number = number(value) else {
                throw .wrongType(path: path, key: key, expected: "a number or a string such as \"0x534c\"", got: typeName(value))
            }
            return numberText(number)
        }
    }

    /// A JSON boolean (Foundation gives it as an NSNumber with type code "c").
    private static func boolean(_ value: Any) -> Bool? {
        guard let number = value as? NSNumber, String(cString: number.objCType) == "c" else { return nil }
        return number.boolValue
    }

    /// A JSON number, not a boolean (Foundation gives both as NSNumber; booleans have type code "c").
    private static func number(_ value: Any) -> NSNumber? {
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c" else { return nil }
        return number
    }

    /// "1400" for whole numbers, "2.5" otherwise, so the shared checks can accept or refuse it.
    private static func numberText(_ number: NSNumber) -> String {
        let double = number.doubleValue
        if double == double.rounded(), abs(double) < 9e15 { return String(Int64(double)) }
        return number.stringValue
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

    static func typeName(_ value: Any) -> String {
        switch value {
        case is String: return "a string"
        case is NSNull: return "null (leave the key out instead)"
        case let number as NSNumber: return String(cString: number.objCType) == "c" ? "a boolean" : "a number"
        case is [Any]: return "an array"
        case is [String: Any]: return "an object"
        default: return "a \(type(of: value))"
        }
    }

    /// Foundation reports "… around character 57."; turn the offset into a line and column.
    private static func describe(_ error: Error, in bytes: [UInt8]) -> String {
        let detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
        var trimmed = detail.hasSuffix(".") ? String(detail.dropLast()) : detail
        if let range = trimmed.range(of: "around character "),
           let offset = Int(trimmed[range.upperBound...].prefix { $0.isNumber }) {
            let before = bytes.prefix(offset)
            let line = before.filter { $0 == UInt8(ascii: "\n") }.count + 1
            let column = before.count - (before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
            trimmed = String(trimmed[..<range.lowerBound]) + "at line \(line), column \(column)"
        }
        return trimmed.prefix(1).lowercased() + trimmed.dropFirst()
    }
}
