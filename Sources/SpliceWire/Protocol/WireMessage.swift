/// One direction of one protocol: the set of message types a receiver accepts.
///
/// Every message travels in the same envelope, one JSON object in one frame:
/// `{"protocol": "splice-worker", "version": 3, "type": "ASSIGN", "id": "…", "body": {…}}`
/// (`id` is optional: a request id the client API echoes in its replies). See docs/protocol.md.
public protocol WireMessage: Sendable {
    /// The protocol name in the envelope (`splice-worker`, `splice-api`).
    static var protocolName: String { get }
    /// The newest protocol version this build speaks, the one it sends unless told otherwise.
    static var protocolVersion: Int { get }
    /// The oldest version this build still accepts and can speak (`oldestProtocolVersion ...
    /// protocolVersion`; other versions are rejected as `unsupported-version`): a coordinator talks
    /// to a worker one release older in that worker's version (docs/protocol.md, Versions).
    /// Defaults to `protocolVersion`: only that one.
    static var oldestProtocolVersion: Int { get }
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

extension WireMessage {
    public static var oldestProtocolVersion: Int { protocolVersion }

    /// The versions this build accepts and speaks.
    public static var protocolVersions: ClosedRange<Int> { oldestProtocolVersion...protocolVersion }
}

/// Maps envelope types to decoders for one `WireMessage` direction.
public struct MessageCatalogue<Message>: Sendable {
    /// One message type and how to wrap its decoded body.
    public struct Entry: Sendable {
        let type: String
        /// The protocol version that introduced the type: an envelope of an older version carrying
        /// it is refused (`unknown-type`, naming both versions), and a peer speaking an older
        /// version is never sent one (`WireCodec.encode(_:version:)` throws).
        let since: Int
        /// From this version on the type's shape is frozen, so it is read in an envelope of any
        /// version from here up — newer than this build speaks included (DISCONNECT: how a peer of
        /// another release says why it will not talk). Nil: only in the versions this build speaks.
        let frozenSince: Int?
        let decode: @Sendable (KeyedDecodingContainer<EnvelopeKey>) throws -> Message

        /// The entry for body `Body`, wrapped into a message by `wrap` (usually an enum case);
        /// `since` the version that introduced it (1: it was always there), `frozenSince` the
        /// version from which every later one reads it (see `frozenSince`).
        public static func body<Body: MessageBody>(
            _: Body.Type, since: Int = 1, frozenSince: Int? = nil, _ wrap: @escaping @Sendable (Body) -> Message
        ) -> Entry {
            Entry(type: Body.messageType, since: since, frozenSince: frozenSince) { container in
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

    /// The version that introduced `type` (1 for a type this direction does not have).
    public func since(_ type: String) -> Int { entries[type]?.since ?? 1 }
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
    /// The envelope's protocol version: the one the sender speaks (an answer goes back in it).
    public let version: Int

    public init(_ message: Message, requestID: String? = nil, version: Int = Message.protocolVersion) {
        self.message = message
        self.requestID = requestID
        self.version = version
    }
}
