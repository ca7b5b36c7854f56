/// The control protocol of a running `sluice up` or `sluice relay` and the commands that talk to it
/// (`sluice exec`, `sluice cgroup`, `sluice status`): one request line, one reply line, then the
/// connection closes. Text, so a person can talk to it with `socat`.
///
/// Requests: `status` (both; the reply's TEXT is one line of JSON, docs/configuration.md "sluice
/// status"); to a relay: `reload` (read its configuration again, as SIGHUP does); to a tunnel: `new tunnel` / `new bypass` (a fresh group for one `exec`; the mode must
/// match the tunnel's), `done NAME` (remove that group, now empty), `add PID`, `del PID`.
/// Replies: `ok [TEXT]` (for `new`, TEXT is the group's directory) or `error MESSAGE`.
public enum ControlRequest: Hashable, Sendable {
    case status
    case reload
    case newGroup(bypass: Bool)
    case done(group: String)
    case add(pid: Int32)
    case del(pid: Int32)

    /// Parses one request line (without the newline); nil if it is not one.
    public init?(line: String) {
        let words = line.split(separator: " ", omittingEmptySubsequences: true)
        if words == ["status"] {
            self = .status
            return
        }
        if words == ["reload"] {
            self = .reload
            return
        }
        guard words.count == 2 else { return nil }
        switch (words[0], words[1]) {
        case ("new", "tunnel"): self = .newGroup(bypass: false)
        case ("new", "bypass"): self = .newGroup(bypass: true)
        case ("done", let name) where name.hasPrefix("app-") && !name.contains("/") && !name.contains(".."):
            self = .done(group: String(name))
        case ("add", let pid): guard let pid = Int32(pid), pid > 0 else { return nil }; self = .add(pid: pid)
        case ("del", let pid): guard let pid = Int32(pid), pid > 0 else { return nil }; self = .del(pid: pid)
        default: return nil
        }
    }

    /// The request as a line, newline included.
    public var line: String {
        switch self {
        case .status: return "status\n"
        case .reload: return "reload\n"
        case .newGroup(let bypass): return "new \(bypass ? "bypass" : "tunnel")\n"
        case .done(let group): return "done \(group)\n"
        case .add(let pid): return "add \(pid)\n"
        case .del(let pid): return "del \(pid)\n"
        }
    }
}

/// The reply to a `ControlRequest`.
public enum ControlReply: Hashable, Sendable {
    case ok(String)
    case error(String)

    public init?(line: String) {
        if line == "ok" { self = .ok(""); return }
        if line.hasPrefix("ok ") { self = .ok(String(line.dropFirst(3))); return }
        if line.hasPrefix("error ") { self = .error(String(line.dropFirst(6))); return }
        return nil
    }

    /// The reply as one line, newline included; newlines inside the text become spaces.
    public var line: String {
        switch self {
        case .ok(let text): return (text.isEmpty ? "ok" : "ok " + Self.oneLine(text)) + "\n"
        case .error(let text): return "error " + Self.oneLine(text) + "\n"
        }
    }

    private static func oneLine(_ text: String) -> String { String(text.map { $0 == "\n" ? " " : $0 }) }
}
