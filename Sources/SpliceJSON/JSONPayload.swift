/// A JSON value that one side encodes from a type and the other decodes into one, carried by the
/// layers between without being looked into: the segment spec of an ASSIGN, the export settings
/// of a SUBMIT. Made from a value it holds the encoded text, which an envelope embeds as it is;
/// read from an envelope it holds the parsed document, which decodes straight into the type.
/// Either way it is converted once at each end.
public struct JSONPayload: Sendable, Hashable, Codable, CustomStringConvertible {
    enum Storage: Sendable {
        /// JSON text this module wrote: one well-formed value.
        case text([UInt8])
        /// Read from a document.
        case node(JSONNode)
    }

    let storage: Storage

    /// The payload of `value`, encoded now.
    public init(encoding value: some Encodable) throws(JSONError) {
        storage = .text(try JSON.encode(value))
    }

    /// A payload holding `value`.
    public init(_ value: JSONValue) {
        storage = .node(JSONNode(value))
    }

    init(node: JSONNode) {
        storage = .node(node)
    }

    /// The `T` the sender encoded.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        switch storage {
        case .text(let text): try JSON.decode(type, from: text)
        case .node(let node): try JSONNodeDecoder.decode(type, from: node, codingPath: [])
        }
    }

    /// The payload as a tree.
    public var value: JSONValue {
        switch storage {
        case .text(let text):
            // Written by this module, so it parses; a failure would be a bug in the writer.
            guard let value = try? JSONValue(parsing: text) else { preconditionFailure("JSONPayload holds invalid text") }
            return value
        case .node(let node):
            return JSONValue(node)
        }
    }

    /// The JSON text.
    public var description: String {
        String(decoding: (try? JSON.encode(self)) ?? [], as: UTF8.self)
    }

    /// Payloads are equal when their values are, whichever form they hold.
    public static func == (lhs: JSONPayload, rhs: JSONPayload) -> Bool {
        if case .text(let left) = lhs.storage, case .text(let right) = rhs.storage, left == right { return true }
        return lhs.value == rhs.value
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(value)
    }

    public init(from decoder: any Decoder) throws {
        if let tree = decoder as? JSONNodeDecoder {
            storage = .node(tree.value)
        } else {
            storage = .node(JSONNode(try JSONValue(from: decoder)))
        }
    }

    /// Splice's writer embeds the text as it is; any other encoder gets the tree.
    public func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }
}
