public import Foundation
internal import SpliceJSON

/// Encodes messages into frames and decodes frames into messages, totally: `decode` never
/// throws or traps, it returns a `WireRejection` for anything it cannot accept.
///
/// The wire form of a message is exactly one frame holding the JSON envelope (after the routing
/// id, which the ROUTER endpoint strips).
public struct WireCodec: Sendable {
    /// The largest envelope accepted or produced, in bytes.
    public var maxMessageBytes: Int

    public init(maxMessageBytes: Int = WireOptions().maxMessageBytes) {
        self.maxMessageBytes = maxMessageBytes
    }

    // MARK: - Encoding

    /// The frames for `message`, with an optional request id in the envelope, in protocol `version`
    /// (nil: the newest this build speaks). Throws `.encoding` for a version this build does not
    /// speak, or one older than the message type (`since`): a peer of that version could not read it.
    /// A frozen type (DISCONNECT) goes in any version, so a peer of another release hears why it is
    /// refused, in its own version.
    public func encode<M: WireMessage>(_ message: M, requestID: String? = nil, version: Int? = nil) throws(WireError)
        -> [Data]
    {
        let type = Swift.type(of: message.body).messageType
        let version = version ?? M.protocolVersion
        if version != M.protocolVersion {
            let entry = M.catalogue.entries[type]
            let speaks = M.protocolVersions.contains(version) || entry?.frozenSince != nil
            guard speaks, version >= 1 else {
                throw WireError(.encoding, "cannot encode \(type) in \(M.protocolName) \(version): this build speaks "
                                + "\(M.protocolVersions.lowerBound)…\(M.protocolVersions.upperBound)")
            }
            guard version >= (entry?.since ?? 1) else {
                throw WireError(.encoding, "cannot encode \(type) in \(M.protocolName) \(version): the type is new "
                                + "in version \(entry?.since ?? 1), which the peer does not speak")
            }
        }
        let data: Data
        do {
            data = Data(try JSON.encode(EncodingBox(message: message, requestID: requestID, version: version)))
        } catch {
            throw WireError(.encoding, "cannot encode \(type): \(error)")
        }
        guard data.count <= maxMessageBytes else {
            throw WireError(
                .messageTooLarge, "\(type) is \(data.count) bytes, over the \(maxMessageBytes)-byte limit")
        }
        return [data]
    }

    // MARK: - Decoding

    /// The message in `frames`, or why it was rejected.
    public func decode<M: WireMessage>(_ frames: [Data], as _: M.Type = M.self) -> Result<Envelope<M>, WireRejection> {
        guard let frame = frames.first else { return .failure(WireRejection(.missingFrames, "empty message")) }
        guard frames.count == 1 else {
            return .failure(WireRejection(.tooManyFrames, "\(frames.count) frames; the envelope is one frame"))
        }
        guard frame.count <= maxMessageBytes else {
            return .failure(WireRejection(.oversized, "\(frame.count) bytes, over the \(maxMessageBytes)-byte limit",
                                          requestID: RequestIDScan.requestID(in: frame)))
        }
        do {
            let box = try JSON.decode(DecodingBox<M>.self, from: frame)
            return .success(Envelope(box.message, requestID: box.requestID, version: box.version))
        } catch let rejection as WireRejection {
            return .failure(rejection)
        } catch {
            return .failure(WireRejection(.garbled, "not a JSON envelope"))
        }
    }
}

private struct EncodingBox<M: WireMessage>: Encodable {
    let message: M
    let requestID: String?
    let version: Int

    func encode(to encoder: any Encoder) throws {
        // In key order, which is the order on the wire (it spares the writer a reordering).
        var container = encoder.container(keyedBy: EnvelopeKey.self)
        try container.encode(message.body, forKey: .body)
        try container.encodeIfPresent(requestID, forKey: .id)
        try container.encode(M.protocolName, forKey: .protocol)
        try container.encode(type(of: message.body).messageType, forKey: .type)
        try container.encode(version, forKey: .version)
    }
}

/// Checks the envelope field by field so each failure gets its own rejection reason. The request
/// id is read first, so every later rejection carries it (a client API endpoint answers it).
private struct DecodingBox<M: WireMessage>: Decodable {
    let message: M
    let requestID: String?
    let version: Int

    init(from decoder: any Decoder) throws {
        let container: KeyedDecodingContainer<EnvelopeKey>
        do {
            container = try decoder.container(keyedBy: EnvelopeKey.self)
        } catch {
            throw WireRejection(.garbled, "the message is not a JSON object")
        }
        // `null` is the same as absent (docs/protocol.md, Encoding rules).
        let requestID: String?
        do {
            requestID = try container.decodeIfPresent(String.self, forKey: .id)
        } catch {
            throw WireRejection(.invalidBody, "the request id `id` is not a string")
        }
        self.requestID = requestID
        let reject = { (reason: WireRejection.Reason, detail: String) in
            WireRejection(reason, detail, requestID: requestID)
        }
        guard let name = try? container.decode(String.self, forKey: .protocol) else {
            throw reject(.garbled, "no `protocol` name")
        }
        guard name == M.protocolName else {
            throw reject(.wrongProtocol, "`protocol` is \(name.prefix(64)), expected \(M.protocolName)")
        }
        guard let version = try? container.decode(Int.self, forKey: .version) else {
            throw reject(.garbled, "no `version` number")
        }
        self.version = version
        // The type is read before the version is judged, so a refusal of the version can say
        // what it refused (a coordinator answers a HELLO of a release it does not speak).
        let type = try? container.decode(String.self, forKey: .type)
        let entry = type.flatMap { M.catalogue.entries[$0] }
        let frozen = entry?.frozenSince.map { version >= $0 } ?? false
        guard M.protocolVersions.contains(version) || frozen else {
            let speaks = M.protocolVersions.count == 1 ? "\(M.protocolVersion)"
                : "\(M.protocolVersions.lowerBound)…\(M.protocolVersions.upperBound)"
            throw WireRejection(.unsupportedVersion, "`version` is \(version); this build speaks \(M.protocolName) \(speaks)",
                                requestID: requestID, version: version, messageType: type.map { String($0.prefix(64)) })
        }
        guard let type else {
            throw reject(.garbled, "no `type`")
        }
        guard let entry else {
            throw reject(.unknownType, "`type` \(type.prefix(64)) is not one of "
                         + M.catalogue.messageTypes.joined(separator: ", "))
        }
        guard version >= entry.since else {
            throw reject(.unknownType, "`type` \(type) is new in \(M.protocolName) \(entry.since); the envelope says "
                         + "version \(version), which does not have it")
        }
        do {
            message = try entry.decode(container)
        } catch let rejection as WireRejection {
            throw reject(rejection.reason, rejection.detail)
        } catch {
            throw reject(.invalidBody, "\(type): \(DecodingFailure.describe(error))")
        }
    }
}
