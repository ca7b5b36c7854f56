/// Turns a `JSONValue` into a `Decodable` value: the reverse of `JSONValueEncoder`, with Foundation's
/// `JSONDecoder` shapes. Integers must be whole and fit their type exactly (`300` is no `UInt8`);
/// a missing key, a wrong type or a bad value is a `DecodingError`, which `describe(_:)` renders as a
/// sentence naming the place: "steps[2].route: key \"table\" is missing".
public struct JSONValueDecoder {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try NodeDecoder(value: value, codingPath: []).unbox(type)
    }

    /// A `DecodingError` as one line; any other error as it describes itself.
    public static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .keyNotFound(let key, let context):
            return at(context.codingPath, "key \"\(key.stringValue)\" is missing")
        case .valueNotFound(_, let context), .typeMismatch(_, let context), .dataCorrupted(let context):
            return at(context.codingPath, context.debugDescription)
        @unknown default:
            return "\(error)"
        }
    }

    /// "steps[2].route: …", or the bare message at the top level.
    static func at(_ path: [any CodingKey], _ message: String) -> String {
        var place = ""
        for key in path {
            if let index = key.intValue { place += "[\(index)]" } else { place += (place.isEmpty ? "" : ".") + key.stringValue }
        }
        return place.isEmpty ? message : "\(place): \(message)"
    }
}

/// The `Decoder` handed to `init(from:)`, over one value.
struct NodeDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: JSONValue].self, "an object") }
        return KeyedDecodingContainer(KeyedNodeDecoder(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([JSONValue].self, "an array") }
        return UnkeyedNodeDecoder(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    /// Primitives directly, anything else through its `init(from:)`.
    func unbox<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is String.Type:
            guard case .string(let text) = value else { throw mismatch(type, "a string") }
            return text as! T
        case is Bool.Type:
            guard case .bool(let on) = value else { throw mismatch(type, "true or false") }
            return on as! T
        case is Double.Type, is Float.Type:
            guard case .number(let number) = value, let double = number.double else { throw mismatch(type, "a number") }
            return (type == Float.self ? Float(double) as Any : double as Any) as! T
        case let integer as any FixedWidthInteger.Type:
            return try unboxInteger(integer) as! T
        default:
            return try T(from: self)
        }
    }

    private func unboxInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        guard case .number(let number) = value else { throw mismatch(type, "a whole number") }
        guard let integer = number.integer(as: type) else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath,
                debugDescription: "\(number) is not a whole number from \(I.min) to \(I.max)"))
        }
        return integer
    }

    func mismatch(_ type: Any.Type, _ expected: String) -> DecodingError {
        if value == .null {
            return .valueNotFound(type, .init(codingPath: codingPath, debugDescription: "expected \(expected), got null"))
        }
        return .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(expected), got \(value.kindName)"))
    }
}

extension NodeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value == .null }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try unbox(type) }
}

struct KeyedNodeDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func child(_ key: Key) throws -> NodeDecoder {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "key \"\(key.stringValue)\" is missing"))
        }
        return NodeDecoder(value: value, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { try child(key).value == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).unbox(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try child(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        NodeDecoder(value: members["super"] ?? .null, codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
}

struct UnkeyedNodeDecoder: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next(_ type: Any.Type) throws -> NodeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [IndexKey(currentIndex)],
                                                          debugDescription: "the array ends after \(elements.count) elements"))
        }
        defer { currentIndex += 1 }
        return NodeDecoder(value: elements[currentIndex], codingPath: codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).unbox(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next([String: JSONValue].self).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([JSONValue].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next(JSONValue.self) }
}
