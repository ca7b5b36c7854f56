/// A JSON document held as a plain Swift value: what `JSONParser` produces and `JSONWriter` prints.
///
/// Sluice reads and writes JSON in two places, config files (`--config`) and the state record under
/// `/run/sluice`; this module does both without Foundation, whose shared libraries (with ICU) were most
/// of the client's resident memory. Objects keep no key order: the writer sorts keys, so equal values
/// print equal bytes.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The kind of value with its article, for messages: "a string", "an array", "null".
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
