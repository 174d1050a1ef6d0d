/// The parsed form every decode reads: a `JSONValue` whose objects keep their fields in document
/// order, found by a linear search where the first of a repeated key wins (as `JSONDecoder`
/// keeps it). Protocol objects have a handful of keys each: hashing every key into a dictionary,
/// as parsing into `JSONValue` does, cost more than the search.
enum JSONNode: Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONNode])
    case object([JSONField])

    /// The value of `key`: its first occurrence.
    func field(_ key: String) -> JSONNode? {
        guard case .object(let fields) = self else { return nil }
        return fields.first { $0.key == key }?.value
    }

    var isNull: Bool {
        if case .null = self { true } else { false }
    }

    /// What kind of value this is, for messages.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    init(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let bool): self = .bool(bool)
        case .integer(let integer): self = .integer(integer)
        case .double(let double): self = .double(double)
        case .string(let string): self = .string(string)
        case .array(let elements): self = .array(elements.map(JSONNode.init))
        case .object(let fields): self = .object(fields.map { JSONField(key: $0.key, value: JSONNode($0.value)) })
        }
    }
}

/// One field of an object, in document order.
struct JSONField: Sendable {
    let key: String
    let value: JSONNode
}

extension JSONValue {
    /// The tree of a parsed document (a repeated key keeps its first value).
    init(_ node: JSONNode) {
        switch node {
        case .null: self = .null
        case .bool(let bool): self = .bool(bool)
        case .integer(let integer): self = .integer(integer)
        case .double(let double): self = .double(double)
        case .string(let string): self = .string(string)
        case .array(let elements): self = .array(elements.map(JSONValue.init))
        case .object(let fields):
            var object: [String: JSONValue] = [:]
            object.reserveCapacity(fields.count)
            for field in fields where object[field.key] == nil { object[field.key] = JSONValue(field.value) }
            self = .object(object)
        }
    }
}
