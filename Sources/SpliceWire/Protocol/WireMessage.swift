/// One direction of one protocol: the set of message types a receiver accepts.
///
/// Every message travels in the same envelope, one JSON object in one frame:
/// `{"protocol": "splice-worker", "version": 1, "type": "ASSIGN", "id": "…", "body": {…}}`
/// (`id` is optional: a request id the client API echoes in its replies). See docs/protocol.md.
public protocol WireMessage: Sendable {
    /// The protocol name in the envelope (`splice-worker`, `splice-api`).
    static var protocolName: String { get }
    /// The protocol version this build speaks; other versions are rejected.
    static var protocolVersion: Int { get }
    /// The message types of this direction and how to build each from its body.
    static var catalogue: MessageCatalogue<Self> { get }
    /// The body to encode; its `MessageBody.messageType` is the envelope's type.
    var body: any MessageBody { get }
}

/// The body of one message type.
public protocol MessageBody: Codable, Sendable {
    /// The envelope `type` (`HELLO`, `ASSIGN`…).
    static var messageType: String { get }
    /// What in a decoded body lies outside the range the protocol allows (a count, an interval, a
    /// size), or nil when everything does. The codec asks after decoding: such a message is
    /// dropped as `out-of-range` and counted, so no receiver ever computes with a number a peer
    /// chose to make it trap or overflow (docs/protocol.md, Limits).
    func rangeViolation() -> String?
}

extension MessageBody {
    public func rangeViolation() -> String? { nil }
}

/// Maps envelope types to decoders for one `WireMessage` direction.
public struct MessageCatalogue<Message>: Sendable {
    /// One message type and how to wrap its decoded body.
    public struct Entry: Sendable {
        let type: String
        let decode: @Sendable (KeyedDecodingContainer<EnvelopeKey>) throws -> Message

        /// The entry for body `Body`, wrapped into a message by `wrap` (usually an enum case).
        public static func body<Body: MessageBody>(
            _: Body.Type, _ wrap: @escaping @Sendable (Body) -> Message
        ) -> Entry {
            Entry(type: Body.messageType) { container in
                let body = try container.decode(Body.self, forKey: .body)
                if let violation = body.rangeViolation() {
                    throw WireRejection(.outOfRange, "\(Body.messageType): \(violation)")
                }
                return wrap(body)
            }
        }
    }

    let entries: [String: Entry]

    public init(_ entries: [Entry]) {
        self.entries = Dictionary(entries.map { ($0.type, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Every type this direction accepts, sorted.
    public var messageTypes: [String] { entries.keys.sorted() }
}

/// The envelope's JSON keys.
public enum EnvelopeKey: String, CodingKey, Sendable {
    case `protocol`, version, type, id, body
}

/// A decoded message with the envelope's optional request id.
public struct Envelope<Message: WireMessage>: Sendable {
    public let message: Message
    /// The request id (client API); nil when absent.
    public let requestID: String?

    public init(_ message: Message, requestID: String? = nil) {
        self.message = message
        self.requestID = requestID
    }
}
