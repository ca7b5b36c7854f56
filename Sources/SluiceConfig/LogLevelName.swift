/// The `--log-level` names. SluiceConfig does not depend on SluiceLog, so a validated level travels as
/// its canonical name; `SluiceLog.LogLevel(name:)` accepts every name this returns.
enum LogLevelName {
    static let all = ["error", "warning", "info", "debug", "trace"]
    static let `default` = "info"

    /// The canonical name for `text` (case-insensitive; "warn" means "warning"), or nil.
    static func canonical(_ text: String) -> String? {
        let lower = text.lowercased()
        if lower == "warn" { return "warning" }
        return all.contains(lower) ? lower : nil
    }
}
