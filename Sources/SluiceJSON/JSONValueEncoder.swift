/// Turns an `Encodable` value into a `JSONValue`, with the same shapes as Foundation's `JSONEncoder`
/// (keyed containers are objects, unkeyed ones arrays, and synthesized enum cases one-key objects such
/// as `{"mtu": {"interface": …}}`), so records written before this module existed read back the same.
///
/// Integers are written exactly (a `UInt64` inode too); a non-finite `Double` or `Float` is an
/// `EncodingError.invalidValue`, since JSON has no text for it.
public struct JSONValueEncoder {
    public init() {}

    public func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        let root = EncodingNode()
        try root.store(value, codingPath: [])
        return root.value
    }
}

/// One value being encoded. Containers hold child nodes (a class, so a nested container handed out
/// earlier still writes into its parent) and are turned into a `JSONValue` at the end.
final class EncodingNode {
    var single: JSONValue?
    var object: [String: EncodingNode]?
    var array: [EncodingNode]?

    init(_ single: JSONValue? = nil) {
        self.single = single
    }

    var value: JSONValue {
        if let object { return .object(object.mapValues(\.value)) }
        if let array { return .array(array.map(\.value)) }
        return single ?? .object([:])  // a type that encoded nothing at all
    }

    /// Stores `value`: a primitive directly, anything else through its `encode(to:)`.
    func store<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
        if let primitive = try Self.primitive(value, codingPath: codingPath) {
            single = primitive
        } else {
            try value.encode(to: NodeEncoder(node: self, codingPath: codingPath))
        }
    }

    static func primitive(_ value: Any, codingPath: [any CodingKey]) throws -> JSONValue? {
        switch value {
        case let text as String: return .string(text)
        case let on as Bool: return .bool(on)
        case let number as Double: return .number(try finite(number, value, codingPath))
        case let number as Float: return .number(try finite(Double(number), value, codingPath))
        case let integer as any BinaryInteger: return .number(JSONNumber(integer))
        default: return nil
        }
    }

    private static func finite(_ number: Double, _ original: Any, _ codingPath: [any CodingKey]) throws -> JSONNumber {
        guard let json = JSONNumber(number) else {
            throw EncodingError.invalidValue(original, .init(codingPath: codingPath, debugDescription: "JSON has no text for \(number)"))
        }
        return json
    }
}

/// The `Encoder` handed to `encode(to:)`.
struct NodeEncoder: Encoder {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.object == nil { node.object = [:] }
        return KeyedEncodingContainer(KeyedNodeEncoder(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.array == nil { node.array = [] }
        return UnkeyedNodeEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleNodeEncoder(node: node, codingPath: codingPath)
    }
}

struct KeyedNodeEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    private func child(_ key: Key) -> EncodingNode {
        let child = EncodingNode()
        node.object![key.stringValue] = child
        return child
    }

    mutating func encodeNil(forKey key: Key) throws { child(key).single = .null }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try child(key).store(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: child(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        NodeEncoder(node: child(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        NodeEncoder(node: child(Key(stringValue: "super")!), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        NodeEncoder(node: child(key), codingPath: codingPath + [key])
    }
}

struct UnkeyedNodeEncoder: UnkeyedEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var count: Int { node.array!.count }

    private func next() -> EncodingNode {
        let child = EncodingNode()
        node.array!.append(child)
        return child
    }

    mutating func encodeNil() throws { next().single = .null }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = codingPath + [IndexKey(count)]
        try next().store(value, codingPath: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = codingPath + [IndexKey(count)]
        return NodeEncoder(node: next(), codingPath: path).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = codingPath + [IndexKey(count)]
        return NodeEncoder(node: next(), codingPath: path).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let path = codingPath + [IndexKey(count)]
        return NodeEncoder(node: next(), codingPath: path)
    }
}

struct SingleNodeEncoder: SingleValueEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.single = .null }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try node.store(value, codingPath: codingPath)
    }
}

/// The key of an array element in a coding path: `steps[3]` is `steps` then `IndexKey(3)`.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "\(intValue!)" }

    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { return nil }
}
