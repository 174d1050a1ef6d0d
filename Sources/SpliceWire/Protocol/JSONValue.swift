internal import Foundation

/// Any JSON value, carried through the protocol without being interpreted — the segment spec in
/// ASSIGN and the export settings in SUBMIT belong to other modules, which encode them into a
/// `JSONValue` and decode them back out. Integers stay integers (exact media timestamps).
/// JSON text does not tell 2 from 2.0, so an integral number always decodes as `.integer`
/// (a `Double` field decodes from it all the same).
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Encodes `value` (any Encodable) as a JSON value.
    public init(encoding value: some Encodable) throws(WireError) {
        let text: [UInt8]
        do {
            do {
                text = try WireJSONEncoder.encode(value)
            } catch is WireJSONEncoder.Unsupported {
                text = Array(try WireCodec.encoder.encode(value))
            }
        } catch {
            throw WireError(code: .encoding, message: "cannot encode \(type(of: value)) as JSON: \(error)")
        }
        self = try JSONValue(parsing: text)
    }

    /// Decodes this value as `type` (for example the segment spec of an ASSIGN).
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(WireJSONEncoder.encode(self)))
    }

    public init(from decoder: any Decoder) throws {
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
