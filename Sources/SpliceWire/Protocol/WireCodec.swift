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

    /// The frames for `message`, with an optional request id in the envelope.
    public func encode<M: WireMessage>(_ message: M, requestID: String? = nil) throws(WireError) -> [Data] {
        let data: Data
        do {
            data = Data(try JSON.encode(EncodingBox(message: message, requestID: requestID)))
        } catch {
            throw WireError(.encoding, "cannot encode \(type(of: message.body).messageType): \(error)")
        }
        guard data.count <= maxMessageBytes else {
            throw WireError(
                .messageTooLarge, "\(type(of: message.body).messageType) is \(data.count) bytes, over the \(maxMessageBytes)-byte limit")
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
            return .failure(WireRejection(.oversized, "\(frame.count) bytes, over the \(maxMessageBytes)-byte limit"))
        }
        do {
            let box = try JSON.decode(DecodingBox<M>.self, from: frame)
            return .success(Envelope(box.message, requestID: box.requestID))
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

    func encode(to encoder: any Encoder) throws {
        // In key order, which is the order on the wire (it spares the writer a reordering).
        var container = encoder.container(keyedBy: EnvelopeKey.self)
        try container.encode(message.body, forKey: .body)
        try container.encodeIfPresent(requestID, forKey: .id)
        try container.encode(M.protocolName, forKey: .protocol)
        try container.encode(type(of: message.body).messageType, forKey: .type)
        try container.encode(M.protocolVersion, forKey: .version)
    }
}

/// Checks the envelope field by field so each failure gets its own rejection reason.
private struct DecodingBox<M: WireMessage>: Decodable {
    let message: M
    let requestID: String?

    init(from decoder: any Decoder) throws {
        let container: KeyedDecodingContainer<EnvelopeKey>
        do {
            container = try decoder.container(keyedBy: EnvelopeKey.self)
        } catch {
            throw WireRejection(.garbled, "the message is not a JSON object")
        }
        guard let name = try? container.decode(String.self, forKey: .protocol) else {
            throw WireRejection(.garbled, "no protocol name")
        }
        guard name == M.protocolName else {
            throw WireRejection(.wrongProtocol, "protocol \(name.prefix(64)), expected \(M.protocolName)")
        }
        guard let version = try? container.decode(Int.self, forKey: .version) else {
            throw WireRejection(.garbled, "no protocol version")
        }
        guard version == M.protocolVersion else {
            throw WireRejection(.unsupportedVersion, "version \(version), this build speaks \(M.protocolVersion)")
        }
        guard let type = try? container.decode(String.self, forKey: .type) else {
            throw WireRejection(.garbled, "no message type")
        }
        guard let entry = M.catalogue.entries[type] else {
            throw WireRejection(.unknownType, "\(type.prefix(64)) is not a \(M.self) type")
        }
        var requestID: String?
        if container.contains(.id) {
            guard let id = try? container.decode(String.self, forKey: .id) else {
                throw WireRejection(.invalidBody, "the request id is not a string")
            }
            requestID = id
        }
        do {
            message = try entry.decode(container)
        } catch let rejection as WireRejection {
            throw rejection
        } catch {
            throw WireRejection(.invalidBody, "\(type): \(Self.describe(error))")
        }
        self.requestID = requestID
    }

    /// Where in the body decoding failed, without quoting the body.
    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "undecodable body" }
        let path: (DecodingError.Context) -> String = { context in
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "missing \((path(context).isEmpty ? "" : path(context) + ".") + key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at \(path(context))"
        case .dataCorrupted(let context):
            return "invalid value at \(path(context)): \(context.debugDescription)"
        @unknown default:
            return "undecodable body"
        }
    }
}
