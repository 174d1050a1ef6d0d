/// Any JSON value, as a tree. Integers stay integers (exact media timestamps): JSON text does not
/// tell 2 from 2.0, so an integral number is always `.integer` (a `Double` field decodes from it
/// all the same). Objects compare by content; their keys are written sorted.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The value `value` encodes to.
    public init(encoding value: some Encodable) throws(JSONError) {
        self = try JSONValue(parsing: JSON.encode(value))
    }

    /// Decodes this value as `type`.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONNodeDecoder.decode(type, from: JSONNode(self), codingPath: [])
    }

    /// Decodes from any decoder: from Splice's own, the node itself; from another (Foundation's),
    /// by trying each kind in turn.
    public init(from decoder: any Decoder) throws {
        if let tree = decoder as? JSONNodeDecoder {
            self = JSONValue(tree.value)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
