/// Where a setting's value came from, so that an error can point at it: a command-line flag or a key
/// (and array element) of a JSON config file.
public enum SettingOrigin: Sendable, Equatable, CustomStringConvertible {
    /// `--name` on the command line (the name without dashes).
    case flag(String)
    /// `key` in the JSON file at `path`; `index` is the 0-based element for array keys.
    case file(path: String, key: String, index: Int?)

    /// "--mtu", or "client.json: key \"mtu\"", or "client.json: key \"route\" element 2" (1-based).
    public var description: String {
        switch self {
        case .flag(let name): return "--\(name)"
        case .file(let path, let key, nil): return "\(path): key \"\(key)\""
        case .file(let path, let key, let index?): return "\(path): key \"\(key)\" element \(index + 1)"
        }
    }
}
