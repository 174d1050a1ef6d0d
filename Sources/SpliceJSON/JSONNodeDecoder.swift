internal import Foundation
internal import SpliceCore

/// Decodes a `Decodable` straight from a parsed document, the way `JSONDecoder` decodes from text
/// with its default strategies: the same numbers accepted (an integer must fit exactly, a
/// `Double` takes an integer), `null` for absent optionals, `Data` as base64, `URL` as a string.
/// Failures are the standard `DecodingError`s, with their coding paths. A `JSONPayload` takes
/// its node as it is.
struct JSONNodeDecoder: Decoder {
    let value: JSONNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// `codingPath` is built only when it is needed: for a nested decoder or an error.
    static func decode<T: Decodable>(
        _ type: T.Type, from value: JSONNode, codingPath: @autoclosure () -> [any CodingKey]
    ) throws -> T {
        // Type identity first, as the writer does: the scalars without a decoder in between.
        if T.self == JSONValue.self { return JSONValue(value) as! T }
        if T.self == JSONPayload.self { return JSONPayload(node: value) as! T }
        if T.self == String.self {
            guard case .string(let string) = value else { throw mismatch(T.self, value, codingPath()) }
            return string as! T
        }
        if T.self == Int.self { return try integer(Int.self, value, codingPath()) as! T }
        if T.self == Int64.self { return try integer(Int64.self, value, codingPath()) as! T }
        if T.self == Int32.self { return try integer(Int32.self, value, codingPath()) as! T }
        if T.self == Bool.self {
            guard case .bool(let bool) = value else { throw mismatch(T.self, value, codingPath()) }
            return bool as! T
        }
        if T.self == Double.self { return try double(value, codingPath()) as! T }
        // The other primitives: their `init(from:)` asks a single-value container for themselves,
        // which must not come back here.
        if T.self == UInt8.self { return try integer(UInt8.self, value, codingPath()) as! T }
        if T.self == UInt16.self { return try integer(UInt16.self, value, codingPath()) as! T }
        if T.self == UInt32.self { return try integer(UInt32.self, value, codingPath()) as! T }
        if T.self == UInt64.self { return try integer(UInt64.self, value, codingPath()) as! T }
        if T.self == UInt.self { return try integer(UInt.self, value, codingPath()) as! T }
        if T.self == Int8.self { return try integer(Int8.self, value, codingPath()) as! T }
        if T.self == Int16.self { return try integer(Int16.self, value, codingPath()) as! T }
        if T.self == Float.self {
            let double = try double(value, codingPath())
            guard let float = Float(exactly: double) ?? (abs(double) <= Double(Float.greatestFiniteMagnitude)
                ? Float(double) : nil)
            else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath(), debugDescription: "\(double) does not fit in Float"))
            }
            return float as! T
        }
        // The vocabulary's strings, without a container (their `init(from:)` reads the same).
        // Each through a helper of its own type: `T?` here would make every call of this
        // function look up `Optional<T>`'s metadata, on entry.
        if T.self == JobID.self { return try vocabulary(value, codingPath(), JobID.init) as! T }
        if T.self == LeaseToken.self { return try vocabulary(value, codingPath(), LeaseToken.init) as! T }
        if T.self == SHA256Digest.self { return try vocabulary(value, codingPath(), SHA256Digest.init) as! T }
        if T.self == URL.self {
            guard case .string(let text) = value, let url = URL(string: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath(), debugDescription: "not a URL"))
            }
            return url as! T
        }
        if T.self == Data.self {
            guard case .string(let text) = value, let data = Data(base64Encoded: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath(), debugDescription: "not base64 data"))
            }
            return data as! T
        }
        return try T(from: JSONNodeDecoder(value: value, codingPath: codingPath()))
    }

    static func vocabulary<V>(
        _ value: JSONNode, _ codingPath: @autoclosure () -> [any CodingKey], _ make: (String) -> V?
    ) throws -> V {
        guard case .string(let text) = value else { throw mismatch(V.self, value, codingPath()) }
        guard let parsed = make(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath(), debugDescription: "not a \(V.self)"))
        }
        return parsed
    }

    static func integer<I: FixedWidthInteger>(
        _ type: I.Type, _ value: JSONNode, _ codingPath: @autoclosure () -> [any CodingKey]
    ) throws -> I {
        switch value {
        case .integer(let integer):
            guard let exact = I(exactly: integer) else {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: codingPath(), debugDescription: "\(integer) does not fit in \(I.self)"))
            }
            return exact
        case .double(let double):
            guard let exact = I(exactly: double) else {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: codingPath(), debugDescription: "\(double) does not fit in \(I.self)"))
            }
            return exact
        default:
            throw mismatch(I.self, value, codingPath())
        }
    }

    static func double(_ value: JSONNode, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch value {
        case .integer(let integer): Double(integer)
        case .double(let double): double
        default: throw mismatch(Double.self, value, codingPath())
        }
    }

    /// `valueNotFound` for a null where a value is needed, else `typeMismatch` — what JSONDecoder throws.
    static func mismatch(_ type: Any.Type, _ value: JSONNode, _ codingPath: [any CodingKey]) -> DecodingError {
        let context = DecodingError.Context(codingPath: codingPath, debugDescription: "expected \(type), found \(value.kind)")
        return value.isNull ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let fields) = value else { throw Self.mismatch([String: Any].self, value, codingPath) }
        return KeyedDecodingContainer(KeyedTreeContainer<Key>(fields: fields, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw Self.mismatch([Any].self, value, codingPath) }
        return UnkeyedTreeContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleTreeContainer(value: value, codingPath: codingPath)
    }
}

/// A key that is an array index, for coding paths.
private struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct KeyedTreeContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let fields: [JSONField]
    let codingPath: [any CodingKey]

    var allKeys: [Key] {
        var seen: Set<String> = []
        return fields.compactMap { seen.insert($0.key).inserted ? Key(stringValue: $0.key) : nil }
    }

    /// The first field of `key` (a repeated key keeps its first value).
    private func lookup(_ key: Key) -> JSONNode? {
        let name = key.stringValue
        for field in fields where field.key == name { return field.value }
        return nil
    }

    func contains(_ key: Key) -> Bool { lookup(key) != nil }

    private func field(_ key: Key) throws -> JSONNode {
        guard let value = lookup(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no \(key.stringValue)"))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        try field(key).isNull
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try JSONNodeDecoder.decode(type, from: field(key), codingPath: codingPath + [key])
    }

    // One search for an optional field, where the protocol's defaults make three (`contains`,
    // `decodeNil`, `decode`). Synthesized `init(from:)` calls the overload of the field's type.
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try present(type, key) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try present(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(type, key) }

    private func present<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
        guard let value = lookup(key), !value.isNull else { return nil }
        return try JSONNodeDecoder.decode(type, from: value, codingPath: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try JSONNodeDecoder(value: field(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try JSONNodeDecoder(value: field(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        JSONNodeDecoder(value: fields.first { $0.key == "super" }?.value ?? .null, codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        JSONNodeDecoder(value: lookup(key) ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedTreeContainer: UnkeyedDecodingContainer {
    let elements: [JSONNode]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [JSONNode], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next(_ type: Any.Type) throws -> JSONNode {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(
                codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "the array has ended"))
        }
        defer { currentIndex += 1 }
        return elements[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let path = codingPath + [IndexKey(currentIndex)]
        return try JSONNodeDecoder.decode(type, from: next(type), codingPath: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let path = codingPath + [IndexKey(currentIndex)]
        return try JSONNodeDecoder(value: next([String: Any].self), codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let path = codingPath + [IndexKey(currentIndex)]
        return try JSONNodeDecoder(value: next([Any].self), codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let path = codingPath + [IndexKey(currentIndex)]
        return JSONNodeDecoder(value: try next(Any.self), codingPath: path)
    }
}

private struct SingleTreeContainer: SingleValueDecodingContainer {
    let value: JSONNode
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value.isNull }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONNodeDecoder.decode(type, from: value, codingPath: codingPath)
    }
}
